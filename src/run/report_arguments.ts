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

/**
 * The content `ctx.finish(value, options)` publishes, or the reason it is refused before anything is committed:
 * options refused as {@linkcode resultContent} refuses them, or content without a value, since content is text
 * representing a result and `finish()` with no value publishes none (the text would be lost).
 */
export function finishContent(value: unknown, options: unknown): string | undefined | BrainError {
  if (options === undefined) return undefined;
  const content = resultContent(options);
  return value === undefined && typeof content === "string"
    ? new BrainError("invalid_argument", CONTENT_WITHOUT_RESULT)
    : content;
}

/** Why content without a result is refused, wherever a Tool reports one (a run function, a Component, the wire). */
export const CONTENT_WITHOUT_RESULT = "content represents a result, and there is none: pass the result with it " +
  "(finish(value, { content })), or finish without content (finish())";

/**
 * The content the options of `ctx.emitResult` or `ctx.finish` carry (`{ content?: string }`), read once, or the
 * reason they are refused.
 */
export function resultContent(options: unknown): string | undefined | BrainError {
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
  return content;
}
