/** Upgrades kept waiting at most; past it the oldest is given up as torn. */
const MAX_PENDING = 1_024;

/**
 * Host sockets upgraded and not open yet. A socket whose client left before
 * its upgrade was answered never opens, closes or errs, and Deno's graceful
 * HTTP shutdown waits on it forever. Each socket is forgotten once it opens, or
 * given up as torn after `timeoutMs` (or once `max` newer ones wait), so their
 * number stays bounded whatever clients do; once one was torn,
 * {@linkcode settled} stays false and the server's shutdown closes its
 * connections at once instead of waiting.
 */
export class PendingUpgrades {
  #timers = new Map<WebSocket, ReturnType<typeof setTimeout>>();
  #torn = false;
  #timeoutMs: number;
  #max: number;

  constructor(timeoutMs: number, max = MAX_PENDING) {
    this.#timeoutMs = timeoutMs;
    this.#max = max;
  }

  /** Upgrades waiting for their socket to open. */
  get size(): number {
    return this.#timers.size;
  }

  /** True when none waits and none was given up: a graceful HTTP shutdown would end. */
  get settled(): boolean {
    return this.#timers.size === 0 && !this.#torn;
  }

  /** Waits for `socket` to open, for `timeoutMs` at most. */
  track(socket: WebSocket): void {
    if (this.#timers.size >= this.#max) this.#tear(this.#timers.keys().next().value!);
    this.#timers.set(socket, setTimeout(() => this.#tear(socket), this.#timeoutMs));
    socket.addEventListener("open", () => this.#forget(socket), { once: true });
  }

  /** Stops waiting: the upgrades still waiting count as torn. */
  close(): void {
    if (this.#timers.size > 0) this.#torn = true;
    this.#timers.forEach(clearTimeout);
    this.#timers.clear();
  }

  #forget(socket: WebSocket): void {
    clearTimeout(this.#timers.get(socket));
    this.#timers.delete(socket);
  }

  #tear(socket: WebSocket): void {
    this.#forget(socket);
    this.#torn = true;
    socket.close();
  }
}
