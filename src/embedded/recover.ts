import type { Journal } from "../journal/journal.ts";
import type { JournalRecord } from "../journal/records.ts";
import { unknownEnd } from "../journal/open_calls.ts";

/** Why a call that was in flight when its Brain stopped ends `unknown`. */
export const ORPHANED_MESSAGE = "Brain stopped while the call was in flight; its outcome is unknown";

/** Finishing records committed per append, well under any journal's batch limit. */
const PER_APPEND = 100;

/**
 * Ends every call the journal still has open with a committed
 * `tool_call_finished` of cause and outcome `unknown` (a `model_call_finished`
 * with outcome `unknown` for a model call). Only for calls no live
 * handle owns: their process is gone, and they are never dispatched again.
 */
export async function endOrphanedCalls(journal: Journal, sessionId: string): Promise<JournalRecord[]> {
  const bodies = (await journal.openCalls(sessionId)).map((started) => unknownEnd(started, ORPHANED_MESSAGE));
  const ended: JournalRecord[] = [];
  for (let first = 0; first < bodies.length; first += PER_APPEND) {
    ended.push(...await journal.append(sessionId, bodies.slice(first, first + PER_APPEND)));
  }
  return ended;
}
