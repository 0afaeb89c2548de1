import { BrainError } from "../outcome/errors.ts";
import { findNonJson } from "../outcome/json.ts";
import { MAX_NAME_LENGTH } from "../util/names.ts";
import { errorText } from "../util/error_text.ts";
import type { ResultOptions } from "../contract/context.ts";

/**
 * The reason `ctx.emit(event, data)` is refused before anything is sent, or
 * undefined when it may go: the same check for every transport, so a remote
 * Tool's bad Event is refused as an embedded one's is, never sent as a frame.
 */
export function refusedEvent(event: unknown, data: unknown): BrainError | undefined {
  if (typeof event !== "string" || event.length === 0 || event.length > MAX_NAME_LENGTH) {
    return new BrainError("invalid_argument", `an event kind must be a string of 1 to ${MAX_NAME_LENGTH} characters`);
  }
  const nonJson = findNonJson(data);
  return nonJson === undefined ? undefined : new BrainError("invalid_argument", `event data is not JSON: ${nonJson}`);
}

/** The reason the options of `ctx.emitResult` or `ctx.finish` are refused, or undefined: `{ content?: string }`. */
export function refusedResultOptions(options: unknown): BrainError | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    return new BrainError("invalid_argument", "result options are an object: { content: string }");
  }
  let read: ResultOptions;
  try {
    read = { ...options };
  } catch (error) {
    return new BrainError("invalid_argument", `result options cannot be read: ${errorText(error)}`);
  }
  const unknown = Object.keys(read).filter((key) => key !== "content");
  if (unknown.length > 0) {
    return new BrainError("invalid_argument", `unknown result options ${unknown.join(", ")}: the known one is content`);
  }
  const { content } = read;
  if (content !== undefined && typeof content !== "string") {
    return new BrainError("invalid_argument", `result content is model-facing text, a string, got a ${typeof content}`);
  }
  return undefined;
}
