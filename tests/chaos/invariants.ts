import type { Journal } from "../../src/journal/journal.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { BrainError, type CallEnd } from "../../mod.ts";

/** How long past its deadline a remote caller may settle, whatever the link does. */
const SETTLE_GRACE_MS = 2_000;

/**
 * Waits for one campaign call and counts what it ended with in `outcomes`
 * (`error:<code>`, its cause, or `throw:<code>`); a throw that is not a
 * BrainError, or settling more than the grace past `deadline`, is a violation.
 */
export async function tallyCall(
  n: number,
  deadline: number,
  ended: () => Promise<CallEnd>,
  outcomes: Record<string, number>,
  violations: string[],
): Promise<void> {
  let seen: string;
  try {
    const result = await ended();
    seen = result.outcome.status === "error" ? `error:${result.outcome.error.code}` : result.cause;
  } catch (error) {
    if (!(error instanceof BrainError)) violations.push(`call ${n} threw a non-BrainError: ${error}`);
    seen = error instanceof BrainError ? `throw:${error.code}` : String(error);
  }
  outcomes[seen] = (outcomes[seen] ?? 0) + 1;
  const late = Date.now() - deadline;
  if (late > SETTLE_GRACE_MS) violations.push(`call ${n} (${seen}) settled ${late} ms after its deadline`);
}

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
