import { BrainError, type BrainErrorCode } from "../../mod.ts";

/**
 * A predicate for `assert.rejects` / `assert.throws`: true for a {@linkcode BrainError} with `code`
 * and, when given, a message matching `message`.
 *
 * For example:
 *   await assert.rejects(brain.sessions.get("missing"), hasCode("session_not_found"));
 *   await assert.rejects(create(), hasCode("invalid_tool", /no-such-tool/));
 */
export function hasCode(code: BrainErrorCode, message?: RegExp): (error: unknown) => boolean {
  return (error) => error instanceof BrainError && error.code === code && (!message || message.test(error.message));
}
