import { BrainError } from "../outcome/errors.ts";

/** The longest Environment, binding, session or host id Brain accepts. */
export const MAX_NAME_LENGTH = 128;

const NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

/**
 * True when `value` is a name that cannot be a path: letters, digits, `-`, `_`
 * and `.`, never starting with a dot (so never `.` or `..`), at most
 * {@linkcode MAX_NAME_LENGTH} characters.
 */
export function isName(value: unknown): value is string {
  return typeof value === "string" && value.length <= MAX_NAME_LENGTH && NAME.test(value);
}

/** Returns `value` when {@linkcode isName} holds; otherwise throws `invalid_argument` naming `what` it was for. */
export function checkName(what: string, value: unknown): string {
  if (isName(value)) return value;
  const shown = typeof value === "string" ? JSON.stringify(value.slice(0, 64)) : typeof value;
  throw new BrainError(
    "invalid_argument",
    `${what} must be 1 to ${MAX_NAME_LENGTH} letters, digits, "-", "_" or "." not starting with ".", got ${shown}`,
    { details: { what } },
  );
}
