import { BrainError } from "../outcome/errors.ts";

/**
 * The typed error for a failure of a journal's store itself: `storage_full`
 * when the disk or database is full (SQLite's message, or PostgreSQL's
 * `disk_full`), else `storage_unavailable` (PostgreSQL's other "insufficient
 * resources", such as too many connections or out of memory, pass), with the
 * store's error as `cause`. A BrainError passes through unchanged.
 */
export function storageError(error: unknown): BrainError {
  if (error instanceof BrainError) return error;
  const message = error instanceof Error ? error.message : String(error);
  // Deno KV refuses a key or value over its limit: the caller's argument, which no retry would change.
  if (/^(Key|Value) too large/.test(message)) {
    return new BrainError("invalid_argument", `the journal's store refused a key: ${message}`, { cause: error });
  }
  const code = (error as { code?: unknown } | null)?.code;
  const full = /full|no space|quota/i.test(message) || code === DISK_FULL;
  return new BrainError(
    full ? "storage_full" : "storage_unavailable",
    `the journal's store failed: ${message}`,
    { cause: error },
  );
}

/** PostgreSQL's SQLSTATE for a full disk. */
const DISK_FULL = "53100";
