import type { Journal } from "../journal/journal.ts";
import type { JournalRecord, RecordBody } from "../journal/records.ts";

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
  const outcome = { status: "unknown", message: ORPHANED_MESSAGE } as const;
  const bodies: RecordBody[] = (await journal.openCalls(sessionId)).map((started) =>
    started.kind === "model_call_started"
      ? { kind: "model_call_finished", call: started.sequence, outcome }
      : { kind: "tool_call_finished", call: started.sequence, cause: "unknown", outcome }
  );
  const ended: JournalRecord[] = [];
  for (let first = 0; first < bodies.length; first += PER_APPEND) {
    ended.push(...await journal.append(sessionId, bodies.slice(first, first + PER_APPEND)));
  }
  return ended;
}
