import type { Lease } from "./lease.ts";

/** One lease renewal waiting for its batch: the lease, its new TTL, and how the caller learns the outcome. */
export interface Renewal {
  lease: Lease;
  ttlMs: number;
  done: PromiseWithResolvers<Lease>;
}

/**
 * Commits one batch: settles each renewal's `done` with the extended lease,
 * or with `fenced` for a lease that is no longer its session's. Throwing
 * fails every renewal of the batch it did not settle with that error.
 */
export type RenewalCommit = (batch: Renewal[]) => Promise<void>;

/**
 * Lease renewals of one store, committed together: renewals asked for in the
 * same tick, or while a batch is being committed, share the next commit (up to
 * `max`). An Ownership's renewals come due on a grid, so a Brain holding
 * thousands of sessions renews them in a few commits instead of one each.
 */
export class RenewalBatches {
  #max: number;
  #commit: RenewalCommit;
  #waiting: Renewal[] = [];
  #running: Promise<void> | undefined;

  constructor(max: number, commit: RenewalCommit) {
    this.#max = max;
    this.#commit = commit;
  }

  /** Extends `lease` by `ttlMs` in the next batch; fails `fenced` once the session no longer honours it. */
  renew(lease: Lease, ttlMs: number): Promise<Lease> {
    const done = Promise.withResolvers<Lease>();
    this.#waiting.push({ lease, ttlMs, done });
    this.#running ??= this.#run();
    return done.promise;
  }

  async #run(): Promise<void> {
    // The renewals asked for in this tick join the first batch.
    await Promise.resolve();
    while (this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.#max);
      try {
        await this.#commit(batch);
      } catch (error) {
        for (const renewal of batch) renewal.done.reject(error);
      }
    }
    this.#running = undefined;
  }
}
