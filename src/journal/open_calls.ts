import type { RecordBody } from "./records.ts";

/** True for a record that opens a call: a Tool call or a model call. */
export function opens(body: RecordBody): boolean {
  return body.kind === "tool_call_started" || body.kind === "model_call_started";
}

/** The sequence of the call a record closes, if it closes one. */
export function closes(body: RecordBody): number | undefined {
  return body.kind === "tool_call_finished" || body.kind === "model_call_finished" ? body.call : undefined;
}
