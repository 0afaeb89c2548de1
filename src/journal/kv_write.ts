import { storageError } from "./storage_error.ts";

/** Busy retries before a write gives up; with the backoff below that is well over a minute of contention. */
const MAX_BUSY_RETRIES = 2_000;

/**
 * Commits the atomic operation `build` fills, again if SQLite reports the file
 * locked by another connection (a second journal on the same file, in this
 * process or another). A locked commit wrote nothing, so retrying cannot commit twice.
 */
export async function commitAtomic(
  kv: Deno.Kv,
  build: (op: Deno.AtomicOperation) => void,
): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
  for (let attempt = 0;; attempt++) {
    const op = kv.atomic();
    build(op);
    try {
      return await op.commit();
    } catch (error) {
      if (!isLocked(error) || attempt >= MAX_BUSY_RETRIES) throw storageError(error);
      await backoff(attempt);
    }
  }
}

function isLocked(error: unknown): boolean {
  return error instanceof Error && /database is locked|database table is locked|SQLITE_BUSY/i.test(error.message);
}

/** Waits a random time that grows with `attempt` (up to 20 ms), so contending writers stop colliding in step. */
export function backoff(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(20, 1 + attempt)));
}
