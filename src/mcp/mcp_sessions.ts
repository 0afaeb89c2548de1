import { callAt } from "../util/timer.ts";
import { onBodyEnd } from "../util/body_end.ts";

interface Entry<T> {
  value: T;
  /** Requests of the session whose responses are still being sent. */
  busy: number;
  /** Cancels the idle expiry armed while the session has no request open. */
  disarm: () => void;
}

/**
 * The MCP sessions one `serveMcp` handler keeps open: at most `max`, counting
 * those being initialized, and each closed (`expire`) once it has had no
 * request open, response stream included, for `idleMs`. A session ended by its
 * client, or expired, frees its slot.
 */
export class McpSessions<T> {
  #open = new Map<string, Entry<T>>();
  #opening = 0;
  #max: number;
  #idleMs: number;
  #expire: (value: T) => void;

  constructor(max: number, idleMs: number, expire: (value: T) => void) {
    this.#max = max;
    this.#idleMs = idleMs;
    this.#expire = expire;
  }

  /** Takes a slot for a session about to be initialized; false when every slot is taken. */
  reserve(): boolean {
    if (this.#open.size + this.#opening >= this.#max) return false;
    this.#opening++;
    return true;
  }

  /** Gives back a slot taken by `reserve`: the session was added, or never opened. */
  unreserve(): void {
    this.#opening--;
  }

  /** Adds a session its `initialize` request just opened: busy until {@linkcode initialized} sends that answer. */
  add(id: string, value: T): void {
    this.#open.set(id, { value, busy: 1, disarm: () => {} });
  }

  /** The answer to session `id`'s `initialize`, which keeps the session busy until its body ends. */
  initialized(id: string, response: Response): Response {
    const entry = this.#open.get(id);
    return entry ? onBodyEnd(response, () => this.#idle(id, entry)) : response;
  }

  /** Answers a request of session `id` with `handle`, keeping the session from expiring until the answer's body ends. */
  async serve(id: string, handle: (value: T) => Promise<Response>): Promise<Response | undefined> {
    const entry = this.#open.get(id);
    if (!entry) return undefined;
    entry.busy++;
    entry.disarm();
    let response: Response;
    try {
      response = await handle(entry.value);
    } catch (error) {
      this.#idle(id, entry);
      throw error;
    }
    return onBodyEnd(response, () => this.#idle(id, entry));
  }

  /** Forgets a session (its client ended it), freeing its slot. */
  delete(id: string): void {
    this.#open.get(id)?.disarm();
    this.#open.delete(id);
  }

  /** One request of the session ended: with none left open, it expires after `idleMs`. */
  #idle(id: string, entry: Entry<T>): void {
    if (--entry.busy > 0 || this.#open.get(id) !== entry || !Number.isFinite(this.#idleMs)) return;
    entry.disarm = callAt(Date.now() + this.#idleMs, () => {
      this.#open.delete(id);
      this.#expire(entry.value);
    });
  }

  /** Forgets every session and returns them, each to be closed. */
  clear(): T[] {
    const open = [...this.#open.values()];
    this.#open.clear();
    for (const entry of open) entry.disarm();
    return open.map((entry) => entry.value);
  }
}
