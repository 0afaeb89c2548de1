import type { ReadOptions, SubscribeOptions } from "./journal.ts";
import type { CommitNotifier } from "./notifier.ts";
import type { JournalRecord } from "./records.ts";
import { settledBeforeAbort } from "../util/signal.ts";

/**
 * The `subscribe` of every journal: yields committed records from `from` on and
 * then waits for the notifier. Ends when the signal aborts or the notifier closes.
 */
export async function* follow(
  read: (sessionId: string, options: ReadOptions) => Promise<JournalRecord[]>,
  notifier: CommitNotifier,
  sessionId: string,
  { from = 1, signal }: SubscribeOptions = {},
): AsyncGenerator<JournalRecord> {
  let next = from;
  while (!signal?.aborted && !notifier.closed) {
    const committed = notifier.next(sessionId);
    const records = await read(sessionId, { from: next });
    for (const record of records) {
      if (signal?.aborted) return;
      yield record;
      next = record.sequence + 1;
    }
    if (records.length > 0) continue;
    let more = false;
    if (!await settledBeforeAbort(committed.then((value) => more = value), signal)) return;
    if (!more) return;
  }
}
