import { BrainError } from "./errors.ts";
import { z } from "zod";
import { findNonJson, type JsonValue } from "./json.ts";
import { errorText } from "../util/error_text.ts";
import { shownValue } from "../util/shown_value.ts";

/** One of the top-level `status` values reserved for outcome envelopes. */
export type OutcomeStatus = "ok" | "error" | "timeout" | "cancelled" | "unknown";

/** Every reserved {@linkcode OutcomeStatus}. */
export const OUTCOME_STATUSES: readonly OutcomeStatus[] = Object.freeze([
  "ok",
  "error",
  "timeout",
  "cancelled",
  "unknown",
]);

/** The error part of an `error` outcome; all four fields survive the journal. */
export interface OutcomeError {
  /** Stable machine-readable code, such as `tool_error` or `invalid_output`. */
  code: string;
  /** Human-readable explanation. */
  message: string;
  /** Whether the caller may reasonably try again. */
  retryable?: boolean;
  /** JSON details for the caller. */
  details?: JsonValue;
}

/**
 * The result envelope of a Tool call. `ok` carries a value; `error` carries an
 * {@linkcode OutcomeError}; `timeout`, `cancelled` and `unknown` say why the caller
 * stopped waiting.
 */
export type Outcome<T extends JsonValue = JsonValue> =
  | { status: "ok"; value: T }
  | { status: "error"; error: OutcomeError }
  | { status: "timeout" | "cancelled" | "unknown"; message?: string };

const jsonValue = z.custom<JsonValue>((value) => findNonJson(value) === undefined, {
  message: "not a JSON value",
});

const envelopeSchema = z.discriminatedUnion("status", [
  z.strictObject({ status: z.literal("ok"), value: z.unknown() }),
  z.strictObject({
    status: z.literal("error"),
    error: z.strictObject({
      code: z.string().min(1),
      message: z.string(),
      retryable: z.boolean().optional(),
      details: jsonValue.optional(),
    }),
  }),
  z.strictObject({
    status: z.enum(["timeout", "cancelled", "unknown"]),
    message: z.string().optional(),
  }),
]);

/**
 * True when `value` claims to be an outcome envelope: a plain object whose
 * top-level `status` is reserved. Other `status` values are ordinary data.
 */
export function isEnvelope(value: unknown): value is { status: OutcomeStatus } {
  try {
    return typeof value === "object" && value !== null && !Array.isArray(value) &&
      OUTCOME_STATUSES.includes((value as { status?: unknown }).status as OutcomeStatus);
  } catch {
    // A Proxy or getter that throws: no envelope can be read from it.
    return false;
  }
}

/**
 * Parses an outcome envelope's shape, or says why it is malformed. An `ok`
 * value is not checked here: output validation and the JSON check come after.
 */
export function parseEnvelope(
  value: unknown,
): { outcome: Outcome | { status: "ok"; value: unknown } } | { malformed: string } {
  const parsed = envelopeSchema.safeParse(value);
  if (parsed.success) return { outcome: parsed.data as Outcome };
  return { malformed: z.prettifyError(parsed.error) };
}

/**
 * Builds an `ok` outcome. Use it to return business data whose own top-level
 * `status` is reserved; the SDK does not look inside `value` for another outcome.
 *
 * @example
 * ```ts
 * import { ok } from "@aexhq/brain";
 * const outcome = ok({ status: "error", note: "this is data, not a failure" });
 * console.log(outcome.status); // "ok"
 * ```
 */
export function ok<T extends JsonValue>(value: T): Outcome<T> {
  return { status: "ok", value };
}

/**
 * Builds an `error` outcome that keeps code, message, retryable and details.
 * A code, message or retryable that could not form a well-formed envelope
 * throws `invalid_argument` here, where the mistake is made.
 *
 * @example
 * ```ts
 * import { fail } from "@aexhq/brain";
 * const outcome = fail("not_found", "no such record", { retryable: false, details: { id: "7" } });
 * console.log(outcome.status); // "error"
 * ```
 */
export function fail(
  code: string,
  message: string,
  extra: { retryable?: boolean; details?: JsonValue } = {},
): Outcome<never> {
  if (typeof code !== "string" || code === "") {
    throw new BrainError("invalid_argument", `fail takes a non-empty error code string, got ${shownValue(code)}`);
  }
  if (typeof message !== "string") throw new BrainError("invalid_argument", "fail takes a message string");
  if (typeof extra !== "object" || extra === null) {
    throw new BrainError("invalid_argument", "fail takes { retryable, details } as its third argument");
  }
  let retryable: unknown, details: JsonValue | undefined, unknown: string[];
  try {
    ({ retryable, details } = extra);
    unknown = Object.keys(extra).filter((key) => key !== "retryable" && key !== "details");
  } catch (error) {
    throw new BrainError("invalid_argument", `fail: its third argument cannot be read: ${errorText(error)}`);
  }
  if (unknown.length > 0) {
    throw new BrainError(
      "invalid_argument",
      `fail: unknown option ${unknown.join(", ")}: the options are retryable, details`,
    );
  }
  if (retryable !== undefined && typeof retryable !== "boolean") {
    throw new BrainError("invalid_argument", "fail: retryable is a boolean");
  }
  const error: OutcomeError = { code, message };
  if (retryable !== undefined) error.retryable = retryable;
  if (details !== undefined) error.details = details;
  return { status: "error", error };
}

/** True for every outcome except `ok`. */
export function isFailure(outcome: Outcome): boolean {
  if (!isEnvelope(outcome)) throw new BrainError("invalid_argument", "isFailure takes an Outcome envelope");
  return outcome.status !== "ok";
}
