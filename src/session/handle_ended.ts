import { BrainError } from "../outcome/errors.ts";

/** What a request on a handle that was ended (by `end()`, `sessions.delete` or `brain.close()`) fails with. */
export function handleEnded(sessionId: string): BrainError {
  return new BrainError(
    "session_closed",
    `session ${sessionId} has ended: its handle was ended by session.end(), brain.sessions.delete() or brain.close(); ` +
      "an open Brain reopens it with brain.sessions.get(id, { tools })",
  );
}
