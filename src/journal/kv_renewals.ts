import { commitAtomic } from "./kv_write.ts";
import { keys } from "./kv_codec.ts";
import { fencedError } from "./lease.ts";
import type { Renewal } from "./renewal_batches.ts";

/** Fence checks one atomic commit may hold: Deno KV's limit. */
export const KV_RENEWALS_PER_COMMIT = 100;

/**
 * Commits a batch of lease renewals of one Deno KV file in one atomic commit
 * (a fence check each). When that commit fails a check, each renewal is
 * committed alone, so only a lease that was taken over fails `fenced`.
 */
export async function commitKvRenewals(kv: Deno.Kv, batch: Renewal[]): Promise<void> {
  if (await commitAll(kv, batch)) return;
  for (const renewal of batch) {
    if (!await commitAll(kv, [renewal])) renewal.done.reject(fencedError(renewal.lease));
  }
}

/** Commits `batch` in one atomic operation; false when a fence changed, and then nothing was written. */
async function commitAll(kv: Deno.Kv, batch: Renewal[]): Promise<boolean> {
  const at = Date.now();
  const result = await commitAtomic(kv, (op) => {
    for (const { lease, ttlMs } of batch) {
      op.check({ key: keys.fence(lease.sessionId), versionstamp: lease.fence })
        .set(keys.lease(lease.sessionId), { expiresAt: at + ttlMs });
    }
  });
  if (!result.ok) return false;
  for (const { lease, ttlMs, done } of batch) done.resolve(Object.freeze({ ...lease, expiresAt: at + ttlMs }));
  return true;
}
