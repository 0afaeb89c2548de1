import { deepFreeze } from "../../util/freeze.ts";
import type { JournalRecord } from "../../journal/records.ts";

/**
 * A queue of one subscription's records. It skips records it has already
 * yielded, so a stream resubscribed after a reconnect never repeats one.
 */
export class RecordStream {
  /** The followed session. */
  readonly session: string;
  /** The next sequence the reader expects. */
  next: number;
  #queue: JournalRecord[] = [];
  #wake: (() => void) | undefined;
  #done = false;
  #error: unknown;

  constructor(session: string, from: number) {
    this.session = session;
    this.next = Math.max(from, 1);
  }

  /** Queues a record unless it was already queued. */
  push(record: JournalRecord): void {
    if (this.#done || record.sequence < this.next) return;
    this.next = record.sequence + 1;
    // Frozen, as every journal's records are.
    this.#queue.push(deepFreeze(record));
    this.#wake?.();
  }

  /** Ends the stream, with `error` when it failed. */
  end(error?: unknown): void {
    if (this.#done) return;
    this.#done = true;
    this.#error = error;
    this.#wake?.();
  }

  /** Yields queued records until the stream ends or `signal` aborts. */
  async *records(signal?: AbortSignal): AsyncGenerator<JournalRecord> {
    const onAbort = () => this.end();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      while (!signal?.aborted) {
        const record = this.#queue.shift();
        if (record) {
          yield record;
          continue;
        }
        if (this.#done) {
          if (this.#error !== undefined) throw this.#error;
          return;
        }
        await new Promise<void>((resolve) => this.#wake = resolve);
        this.#wake = undefined;
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }
}
