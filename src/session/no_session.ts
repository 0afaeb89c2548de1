import { BrainError } from "../outcome/errors.ts";

/** What asking a Brain for a session it does not have fails with. */
export function noSession(sessionId: string): BrainError {
  return new BrainError(
    "session_not_found",
    `no session ${sessionId}: brain.sessions.list() names the sessions there are, ` +
      "brain.sessions.create({ id }) makes a new one",
  );
}
