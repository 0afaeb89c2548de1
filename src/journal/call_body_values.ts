import { keyListNumber } from "./key_lists.ts";
import type { RecordBody } from "./records.ts";

/** The key list of each shape a call's intent, event, result and finish take, in the order their type declares. */
const INTENT = keyListNumber(["kind", "tool", "input", "activation"]);
const INTENT_DEADLINE = keyListNumber(["kind", "tool", "input", "deadline", "activation"]);
const INTENT_CALL_ID = keyListNumber(["kind", "tool", "input", "activation", "toolCallId"]);
const INTENT_DEADLINE_CALL_ID = keyListNumber(["kind", "tool", "input", "deadline", "activation", "toolCallId"]);
const EVENT = keyListNumber(["kind", "call", "event", "data"]);
const RESULT = keyListNumber(["kind", "call", "outcome"]);
const RESULT_CONTENT = keyListNumber(["kind", "call", "outcome", "content"]);
const FINISH = keyListNumber(["kind", "call", "cause", "outcome"]);

/**
 * Puts the fields of a call's intent, event, result or finish in `values`,
 * each read once, by the fields its type declares (an optional one only when
 * it is not undefined), and returns the number of their key list; -1, having
 * read only the kind, for any other body. A call commits these bodies on every
 * call, and finding their keys with `for in` cost more than packing most of
 * them: only a body of its type has these fields, so it is read as one.
 */
export function callBodyValues(body: RecordBody, values: unknown[]): number {
  const kind = body.kind;
  values[0] = kind;
  switch (kind) {
    case "tool_call_started":
      return intentValues(body, values);
    case "tool_event":
      values[1] = body.call;
      values[2] = body.event;
      values[3] = body.data;
      return EVENT;
    case "tool_result": {
      values[1] = body.call;
      values[2] = body.outcome;
      const content = body.content;
      if (content === undefined) return RESULT;
      values[3] = content;
      return RESULT_CONTENT;
    }
    case "tool_call_finished":
      values[1] = body.call;
      values[2] = body.cause;
      values[3] = body.outcome;
      return FINISH;
    default:
      return -1;
  }
}

function intentValues(body: Extract<RecordBody, { kind: "tool_call_started" }>, values: unknown[]): number {
  values[1] = body.tool;
  values[2] = body.input;
  const deadline = body.deadline;
  let next = 3;
  if (deadline !== undefined) values[next++] = deadline;
  values[next++] = body.activation;
  const toolCallId = body.toolCallId;
  if (toolCallId !== undefined) values[next] = toolCallId;
  if (deadline === undefined) return toolCallId === undefined ? INTENT : INTENT_CALL_ID;
  return toolCallId === undefined ? INTENT_DEADLINE : INTENT_DEADLINE_CALL_ID;
}
