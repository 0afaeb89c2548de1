import { checkRange } from "./read_options.ts";
import { BrainError } from "../outcome/errors.ts";
import { checkSessionId } from "../util/names.ts";
import type { ReadOptions, SubscribeOptions } from "./journal.ts";
import type { JournalRecord } from "./records.ts";

/**
 * What wakes one subscription. A waiter takes `next()` before it reads, so a
 * commit between the read and the wait is never missed; `next()` resolves true
 * on a later commit (or a spurious wake), false once the source has ended.
 */
export interface CommitWakes {
  next(): Promise<boolean>;
  /** True once the journal is closing: the subscription then ends quietly instead of reading. */
  closed(): boolean;
  /** Releases what the source holds, such as a watch stream. */
  close(): Promise<void> | void;
}

/**
 * The `subscribe` of every journal: yields committed records from `from` on and
 * then waits for a wake. `wakes` is opened only once iteration starts and closed
 * however it ends: the signal aborts, the source ends, or the consumer stops.
 */
export async function* follow(
  read: (sessionId: string, options: ReadOptions) => Promise<JournalRecord[]>,
  wakes: () => CommitWakes,
  sessionId: string,
  options: SubscribeOptions = {},
): AsyncGenerator<JournalRecord> {
  checkSessionId(sessionId);
  const { from = 1, signal } = checkRange("subscribe options", options);
  if (signal?.aborted) return;
  const source = wakes();
  const stop = signal && whenAborted(signal);
  try {
    let next = from;
    let failures = 0;
    while (!signal?.aborted && !source.closed()) {
      const committed = source.next();
      committed.catch(() => {});
      let records: JournalRecord[];
      try {
        records = await read(sessionId, { from: next });
        failures = 0;
      } catch (error) {
        if (source.closed()) return;
        if (error instanceof BrainError && error.code === "journal_corrupt") {
          // The records before the damaged one are still yielded, then its error.
          const damaged = (error.details as { sequence?: unknown } | undefined)?.sequence;
          if (typeof damaged === "number" && damaged > next) {
            for (const record of await read(sessionId, { from: next, limit: damaged - next })) {
              if (signal?.aborted) return;
              yield record;
            }
          }
          throw error;
        }
        // A store that failed for a moment (a dropped database connection) is read again, backing off.
        if (!(error instanceof BrainError && error.code === "storage_unavailable")) throw error;
        const pause = Math.min(READ_RETRY_MAX_MS, READ_RETRY_MS * 2 ** failures++);
        if (!await waitFor(pause, signal, committed)) return;
        continue;
      }
      for (const record of records) {
        if (signal?.aborted) return;
        yield record;
        next = record.sequence + 1;
      }
      // A commit since `committed` was taken has already resolved it, so waiting never misses one.
      if (!await (stop ? stop.wait(committed) : committed)) return;
    }
  } finally {
    stop?.release();
    await source.close();
  }
}

/** First pause before reading again after a failed read; it doubles per failure up to the most. */
const READ_RETRY_MS = 50;
const READ_RETRY_MAX_MS = 2_000;

/** Resolves true after `ms` or on a commit, false as soon as `signal` aborts or the source ends. */
function waitFor(ms: number, signal: AbortSignal | undefined, committed: Promise<boolean>): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (more: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(more);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
    committed.then(done, () => {});
  });
}

/**
 * Waits that end early, with false, once `signal` aborts: one listener for the
 * whole subscription rather than one per wait, and nothing left behind by each
 * wait (a race against one long-lived abort promise would keep a reaction per wait).
 */
function whenAborted(signal: AbortSignal): { wait(committed: Promise<boolean>): Promise<boolean>; release(): void } {
  let wake: ((more: boolean) => void) | undefined;
  const onAbort = () => wake?.(false);
  signal.addEventListener("abort", onAbort, { once: true });
  return {
    wait(committed) {
      if (signal.aborted) return Promise.resolve(false);
      const { promise, resolve, reject } = Promise.withResolvers<boolean>();
      wake = resolve;
      committed.then(resolve, reject);
      return promise;
    },
    release: () => signal.removeEventListener("abort", onAbort),
  };
}
