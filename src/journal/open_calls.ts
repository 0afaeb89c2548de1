import type { JournalRecord, RecordBody } from "./records.ts";

/** True for a record that opens a call: a Tool call or a model call. */
export function opens(body: RecordBody): boolean {
  return body.kind === "tool_call_started" || body.kind === "model_call_started";
}

/** The sequence of the call a record closes, if it closes one. */
export function closes(body: RecordBody): number | undefined {
  return body.kind === "tool_call_finished" || body.kind === "model_call_finished" ? body.call : undefined;
}

/** The record that ends the call `started` opened with an `unknown` outcome saying `message`. */
export function unknownEnd(started: JournalRecord, message: string): RecordBody {
  const outcome = { status: "unknown", message } as const;
  return started.kind === "model_call_started"
    ? { kind: "model_call_finished", call: started.sequence, outcome }
    : { kind: "tool_call_finished", call: started.sequence, cause: "unknown", outcome };
}
