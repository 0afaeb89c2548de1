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
  const kind = refusedEventKind(event);
  if (kind) return kind;
  const nonJson = findNonJson(data);
  return nonJson === undefined ? undefined : new BrainError("invalid_argument", `event data is not JSON: ${nonJson}`);
}

/** The kind last accepted: a Tool emits few kinds many times, and each emit's kind is checked (embedded, twice). */
let acceptedKind: string | symbol = Symbol("no kind yet");

/**
 * The reason an event kind is refused, or undefined: a kind is an identifier,
 * 1 to {@linkcode MAX_NAME_LENGTH} characters of well-formed Unicode with no
 * control character and no U+FFFD, which stands for bytes that were not UTF-8
 * (a Component guest's kind is decoded from its memory).
 */
export function refusedEventKind(event: unknown): BrainError | undefined {
  if (event === acceptedKind) return undefined;
  if (
    typeof event === "string" && event.length > 0 && event.length <= MAX_NAME_LENGTH && event.isWellFormed() &&
    !/[\p{Cc}\uFFFD]/u.test(event)
  ) {
    acceptedKind = event;
    return undefined;
  }
  return new BrainError(
    "invalid_argument",
    `an event kind must be 1 to ${MAX_NAME_LENGTH} characters of UTF-8 text without control characters`,
  );
}

/** The reason the options of `ctx.emitResult` or `ctx.finish` are refused, or undefined: `{ content?: string }`. */
export function refusedResultOptions(options: unknown): BrainError | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== "object" || options === null) {
    return new BrainError("invalid_argument", "result options are an object: { content: string }");
  }
  let read: ResultOptions;
  try {
    if (Array.isArray(options)) return new BrainError("invalid_argument", "result options are an object, not a list");
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
