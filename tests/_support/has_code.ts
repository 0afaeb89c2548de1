import { BrainError, type BrainErrorCode } from "../../mod.ts";

/**
 * A predicate for `assert.rejects` / `assert.throws`: true for a {@linkcode BrainError} with `code`.
 *
 * For example:
 *   await assert.rejects(brain.sessions.get("missing"), hasCode("session_not_found"));
 */
export function hasCode(code: BrainErrorCode): (error: unknown) => boolean {
  return (error) => error instanceof BrainError && error.code === code;
}
