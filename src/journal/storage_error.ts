import { BrainError } from "../outcome/errors.ts";
import { isInstance } from "../outcome/known_keys.ts";
import { errorText } from "../util/error_text.ts";

/**
 * The typed error for a failure of a journal's store itself: `storage_full`
 * when the disk or database is full (SQLite's message, or PostgreSQL's
 * `disk_full`), else `storage_unavailable` (PostgreSQL's other "insufficient
 * resources", such as too many connections or out of memory, pass), with the
 * store's error as `cause`. A BrainError passes through unchanged. Never
 * throws: any thrown value (a string, `null`, a revoked Proxy) is a failure
 * of the store.
 */
export function storageError(error: unknown): BrainError {
  if (isInstance(error, BrainError)) return error;
  const message = errorText(error);
  // Deno KV refuses a key or value over its limit: the caller's argument, which no retry would change.
  if (/^(Key|Value) too large/.test(message)) {
    return new BrainError("invalid_argument", `the journal's store refused a key: ${message}`, { cause: error });
  }
  const code = codeOf(error);
  const full = /full|no space|quota/i.test(message) || code === DISK_FULL;
  return new BrainError(
    full ? "storage_full" : "storage_unavailable",
    `the journal's store failed: ${message}`,
    { cause: error },
  );
}

/** PostgreSQL's SQLSTATE for a full disk. */
const DISK_FULL = "53100";

/** The `code` a thrown value carries, if it can be read. */
function codeOf(error: unknown): unknown {
  try {
    return (error as { code?: unknown } | null)?.code;
  } catch {
    return undefined;
  }
}
