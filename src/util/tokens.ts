import { BrainError } from "../outcome/errors.ts";

/** The longest secret token (host, operator or Environment token) Brain accepts, in characters. */
export const MAX_TOKEN_LENGTH = 4096;

// Printable ASCII, no space at either end: HTTP trims a header value, so such a token could never match.
const TOKEN = /^[!-~](?:[ -~]*[!-~])?$/;

/**
 * True when `value` can be a secret token: 1 to {@linkcode MAX_TOKEN_LENGTH}
 * printable ASCII characters, not starting or ending with a space. A token
 * travels as an HTTP header value and is hashed as UTF-8, so anything wider
 * than ASCII could reach the other side as different bytes.
 */
export function isToken(value: unknown): value is string {
  return typeof value === "string" && value.length <= MAX_TOKEN_LENGTH && TOKEN.test(value);
}

/** Returns `value` when {@linkcode isToken} holds; otherwise throws `invalid_argument` naming `what` it was for (never the value). */
export function checkToken(what: string, value: unknown): string {
  if (isToken(value)) return value;
  const got = typeof value !== "string"
    ? typeof value
    : value.length > MAX_TOKEN_LENGTH
    ? `${value.length} characters`
    : "other characters";
  throw new BrainError(
    "invalid_argument",
    `${what} must be 1 to ${MAX_TOKEN_LENGTH} printable ASCII characters without a space at either end, got ${got}`,
    { details: { what } },
  );
}
