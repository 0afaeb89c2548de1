import type { Journal } from "../../src/journal/journal.ts";
import type { JournalRecord } from "../../src/journal/records.ts";

/**
 * The journal invariants of one session, as violations: sequences dense from 1,
 * every started call ended by exactly one terminal record, nothing of a call
 * after its terminal but `tool_call_late` (and no `tool_call_late` before it), and no
 * call left open.
 */
export function journalViolations(records: readonly JournalRecord[]): string[] {
  const violations: string[] = [];
  records.forEach((record, index) => {
    if (record.sequence !== index + 1) violations.push(`record ${index + 1} has sequence ${record.sequence}`);
  });
  const started = new Set<number>();
  const ended = new Map<number, number>();
  for (const record of records) {
    if (record.kind === "tool_call_started" || record.kind === "model_call_started") started.add(record.sequence);
    if (!("call" in record) || typeof record.call !== "number") continue;
    if (record.kind === "tool_message" || record.kind === "observation_message") continue;
    const call = record.call;
    if (record.kind === "tool_call_finished" || record.kind === "model_call_finished") {
      if (!started.has(call)) violations.push(`record ${record.sequence} ends call ${call}, which never started`);
      if (ended.has(call)) {
        violations.push(`call ${call} has a second terminal record ${record.sequence} (first ${ended.get(call)})`);
      }
      ended.set(call, record.sequence);
    } else if (record.kind === "tool_call_late") {
      if (!ended.has(call)) {
        violations.push(`late record ${record.sequence} of call ${call} precedes its terminal record`);
      }
    } else if (ended.has(call)) {
      violations.push(`record ${record.sequence} (${record.kind}) of call ${call} follows its terminal record`);
    }
  }
  for (const call of started) if (!ended.has(call)) violations.push(`call ${call} was left open`);
  return violations;
}

/** {@linkcode journalViolations} of a session as `journal` has it, plus its open-call index agreeing. */
export async function checkJournal(journal: Journal, sessionId: string): Promise<string[]> {
  const records = await journal.read(sessionId);
  const violations = journalViolations(records);
  const open = await journal.openCalls(sessionId);
  if (open.length > 0) violations.push(`the journal's open-call index still lists ${open.map((r) => r.sequence)}`);
  return violations;
}
