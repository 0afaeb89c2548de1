import { commitAtomic } from "./kv_write.ts";
import { keys } from "./kv_codec.ts";
import { fencedError, type Lease } from "./lease.ts";

/** Fence checks one atomic commit may hold: Deno KV's limit. */
const RENEWALS_PER_COMMIT = 100;

interface Renewal {
  lease: Lease;
  expiresAt: number;
  done: PromiseWithResolvers<Lease>;
}

/**
 * Lease renewals of one Deno KV file, committed together: renewals asked for
 * in the same tick, or while a commit is running, share the next atomic commit
 * (up to 100, one fence check each). A Brain holding thousands of sessions then
 * renews them in a few commits instead of one commit each. When a shared commit
 * fails a check, each of its renewals is committed alone, so only a lease that
 * was taken over fails `fenced`.
 */
export class KvRenewals {
  #kv: Deno.Kv;
  #waiting: Renewal[] = [];
  #running: Promise<void> | undefined;

  constructor(kv: Deno.Kv) {
    this.#kv = kv;
  }

  /** Extends `lease` to `expiresAt`, once the session's fence still names it; fails `fenced` otherwise. */
  renew(lease: Lease, expiresAt: number): Promise<Lease> {
    const done = Promise.withResolvers<Lease>();
    this.#waiting.push({ lease, expiresAt, done });
    this.#running ??= this.#run();
    return done.promise;
  }

  async #run(): Promise<void> {
    // The renewals asked for in this tick join the first commit.
    await Promise.resolve();
    while (this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, RENEWALS_PER_COMMIT);
      try {
        if (!await this.#commit(batch)) {
          for (const renewal of batch) {
            if (await this.#commit([renewal])) continue;
            renewal.done.reject(fencedError(renewal.lease));
          }
        }
      } catch (error) {
        for (const renewal of batch) renewal.done.reject(error);
      }
    }
    this.#running = undefined;
  }

  /** Commits `batch` in one atomic operation; false when a fence changed, and then nothing was written. */
  async #commit(batch: Renewal[]): Promise<boolean> {
    const result = await commitAtomic(this.#kv, (op) => {
      for (const { lease, expiresAt } of batch) {
        op.check({ key: keys.fence(lease.sessionId), versionstamp: lease.fence })
          .set(keys.lease(lease.sessionId), { expiresAt });
      }
    });
    if (!result.ok) return false;
    for (const { lease, expiresAt, done } of batch) done.resolve(Object.freeze({ ...lease, expiresAt }));
    return true;
  }
}
