/** How long Brain batches wake notifications, from the first pending commit. */
export const WAKE_BATCH_MS = 5;

/** Timer functions a {@linkcode WakeBatcher} uses; `setTimeout`/`clearTimeout` by default. */
export interface WakeTimers {
  /** Calls `fire` once after `delayMs`; returns a handle for `cancel`. */
  schedule(fire: () => void, delayMs: number): unknown;
  /** Cancels a scheduled call. */
  cancel(handle: unknown): void;
}

const realTimers: WakeTimers = {
  schedule: (fire, delayMs) => setTimeout(fire, delayMs),
  cancel: (handle) => clearTimeout(handle as number),
};

/**
 * Batches wake notifications: the first `notify` opens a window of
 * {@linkcode WAKE_BATCH_MS}; notifications inside it join the batch without
 * extending it; when it closes, `wake` runs once. Notifying never waits, so it
 * never delays the commit that caused it.
 *
 * @example
 * ```ts
 * import { WakeBatcher } from "@aexhq/brain";
 * let wakes = 0;
 * const batcher = new WakeBatcher(() => wakes++);
 * batcher.notify();
 * batcher.notify(); // same batch
 * batcher.close();
 * ```
 */
export class WakeBatcher {
  #wake: () => void;
  #windowMs: number;
  #timers: WakeTimers;
  #pending: unknown;
  #closed = false;

  /** Creates a batcher that calls `wake` once per window. */
  constructor(wake: () => void, { windowMs = WAKE_BATCH_MS, timers = realTimers }: {
    windowMs?: number;
    timers?: WakeTimers;
  } = {}) {
    this.#wake = wake;
    this.#windowMs = windowMs;
    this.#timers = timers;
  }

  /** True while a window is open. */
  get pending(): boolean {
    return this.#pending !== undefined;
  }

  /** Records a commit; opens a window unless one is open. */
  notify(): void {
    if (this.#closed || this.#pending !== undefined) return;
    this.#pending = this.#timers.schedule(() => {
      this.#pending = undefined;
      if (!this.#closed) this.#wake();
    }, this.#windowMs);
  }

  /** Cancels the open window; later notifications are ignored. */
  close(): void {
    this.#closed = true;
    if (this.#pending !== undefined) this.#timers.cancel(this.#pending);
    this.#pending = undefined;
  }
}
