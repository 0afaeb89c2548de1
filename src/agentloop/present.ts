import type { JournalRecord } from "../journal/records.ts";
import type { Outcome } from "../outcome/outcome.ts";

type ResultRecord = Extract<JournalRecord, { kind: "tool_result" }>;
type FinishedRecord = Extract<JournalRecord, { kind: "tool_call_finished" }>;

/** Model-facing text of one outcome: ok values as JSON, failures as a sentence with their code. */
export function formatOutcome(outcome: Outcome): string {
  switch (outcome.status) {
    case "ok":
      return JSON.stringify(outcome.value);
    case "error": {
      const { code, message, details } = outcome.error;
      return `Error (${code}): ${message}${details === undefined ? "" : ` ${JSON.stringify(details)}`}`;
    }
    default:
      return `The call ended: ${outcome.status}${outcome.message ? ` (${outcome.message})` : ""}`;
  }
}

/** A result's `content` when it has one, otherwise its formatted outcome. */
export function presentResult(record: ResultRecord): string {
  return record.content ?? formatOutcome(record.outcome);
}

/**
 * What the model should hear about a call's end, if anything: nothing for a
 * plain finish or one whose outcome is the last result already shown, the
 * outcome otherwise (timeout, cancellation, unknown, or an error without a result).
 */
export function presentFinish(record: FinishedRecord, lastResult: ResultRecord | undefined): string | undefined {
  if (record.cause === "finish") return undefined;
  if (lastResult && JSON.stringify(lastResult.outcome) === JSON.stringify(record.outcome)) return undefined;
  return formatOutcome(record.outcome);
}
