import { BrainError } from "../outcome/errors.ts";
import { paused } from "../util/paused.ts";
import type { Journal } from "./journal.ts";
import type { JournalRecord, RecordBody } from "./records.ts";
import { sameBody } from "./same_body.ts";

/** Pauses before each read that decides whether a call's doubtful commit landed, while the store keeps failing. */
const READ_BACK_MS = [0, 50, 250, 1_000, 2_000];

/**
 * The records of a commit of `bodies`, all of call `call`, that the store failed
 * with its outcome unknown (`storage_unavailable`), read back: the records if
 * it landed, undefined if it did not or the store stayed down longer than the
 * reads that decide it. The call's owner commits its records one at a time and
 * is their only writer, and `after` is the sequence of the call's last record it
 * was answered for: the call's records after it, if any, are this commit's.
 * A record of the call that is not the commit's (another owner ended the call)
 * means it did not land. Once `stopping` aborts (the owner's Brain closes), the
 * next read is made at once and is the last: what it reads decides, as any read's.
 */
export async function landedCommit(
  journal: Journal,
  sessionId: string,
  call: number,
  after: number,
  bodies: readonly RecordBody[],
  stopping?: AbortSignal,
): Promise<JournalRecord[] | undefined> {
  for (const pause of READ_BACK_MS) {
    if (pause > 0) await paused(pause, stopping);
    const last = stopping?.aborted === true;
    let records;
    try {
      records = await journal.read(sessionId, { from: after + 1 });
    } catch (error) {
      if (error instanceof BrainError && error.code === "storage_unavailable" && !last) continue;
      return undefined;
    }
    const ofCall = records.filter((record) => "call" in record && record.call === call).slice(0, bodies.length);
    const landed = ofCall.length === bodies.length && ofCall.every((record, index) => sameBody(record, bodies[index]));
    return landed ? ofCall : undefined;
  }
  return undefined;
}
