import type { JournalRecord } from "../../src/journal/records.ts";

type Kind = JournalRecord["kind"];

/** The records of one turn whose model calls one Tool that emits an event and finishes, then answers. */
export const ONE_TOOL_TURN: readonly Kind[] = [
  "user_message",
  "model_call_started",
  "model_call_finished",
  "assistant_message",
  "tool_call_started",
  "tool_event",
  "tool_result",
  "tool_call_finished",
  "tool_message",
  "model_call_started",
  "model_call_finished",
  "assistant_message",
];

/** The records of a call that returned a first result, then finished with a second. */
export const RETURNED_THEN_FINISHED: readonly Kind[] = [
  "tool_call_started",
  "tool_result",
  "tool_returned",
  "tool_result",
  "tool_call_finished",
];
