import { BrainError } from "../../mod.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import type { AppendOptions, Lease } from "../../src/journal/lease.ts";
import type { JournalRecord, RecordBody } from "../../src/journal/records.ts";

/**
 * A KV journal whose store fails on demand: the next `failures` terminal commits
 * (`tool_call_finished` appends) with `code`, and every lease renewal while
 * `renewals` is `"failing"` (so the lease lapses for another Brain to take).
 *
 * For example:
 *   const journal = await FlakyJournal.at(`${dir}/brain.kv`);
 *   journal.failures = 100; // every terminal commit fails storage_unavailable from now on
 */
export class FlakyJournal extends KvJournal {
  /** Opens the KV file at `path`. */
  static async at(path: string): Promise<FlakyJournal> {
    return new FlakyJournal(await Deno.openKv(path), path);
  }
  /** How many more terminal commits fail. */
  failures = 0;
  /** What they fail with. */
  code: "storage_unavailable" | "journal_closed" = "storage_unavailable";
  /** Whether lease renewals fail (`storage_unavailable`), as a store that stopped answering would. */
  renewals: "working" | "failing" = "working";

  override append(sessionId: string, bodies: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]> {
    if (this.failures > 0 && bodies.some((body) => body.kind === "tool_call_finished")) {
      this.failures--;
      return Promise.reject(new BrainError(this.code, "the disk went away"));
    }
    return super.append(sessionId, bodies, options);
  }

  override renew(lease: Lease, ttlMs: number): Promise<Lease> {
    if (this.renewals === "failing") return Promise.reject(new BrainError("storage_unavailable", "the disk is slow"));
    return super.renew(lease, ttlMs);
  }
}
