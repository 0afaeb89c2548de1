import { BrainError } from "../../mod.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import type { Journal } from "../../src/journal/journal.ts";
import type { AppendOptions } from "../../src/journal/lease.ts";
import type { JournalRecord, RecordBody } from "../../src/journal/records.ts";

/**
 * A KV journal whose store fails the next `failures` terminal commits
 * (`tool_call_finished` appends) with `code`.
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
  #failed = 0;
  #waiting: { count: number; resolve: () => void }[] = [];

  /** Resolves once `count` terminal commits in all were failed. */
  failed(count: number): Promise<void> {
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#waiting.push({ count, resolve });
    this.#counted();
    return promise;
  }

  #counted(): void {
    this.#waiting = this.#waiting.filter(({ count, resolve }) => count > this.#failed || void resolve());
  }

  override append(sessionId: string, bodies: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]> {
    if (this.failures > 0 && bodies.some((body) => body.kind === "tool_call_finished")) {
      this.failures--;
      this.#failed++;
      this.#counted();
      return Promise.reject(new BrainError(this.code, "the disk went away"));
    }
    return super.append(sessionId, bodies, options);
  }
}

/** A journal whose lease renewals can be made to fail, and the switch. */
export interface StalledLeases {
  /** The journal to give a Brain: `journal` itself in all but its renewals. */
  readonly journal: Journal;
  /** While true, every renewal fails `storage_unavailable`, as a store that stopped answering would. */
  stalled: boolean;
}

/**
 * `journal` with lease renewals that fail on demand, so its owner's leases lapse
 * for another Brain to take, whatever store it is.
 *
 * For example:
 *   const leases = stalledLeases(await PostgresJournal.open(url));
 *   const server = await servedBrain({ journal: leases.journal, leaseMs: 300, serverToken });
 *   leases.stalled = true; // another Brain can take the server's sessions once their leases lapse
 */
export function stalledLeases(journal: Journal): StalledLeases {
  const switched: StalledLeases = {
    stalled: false,
    journal: new Proxy(journal, {
      get(target, key) {
        if (key === "renew" && switched.stalled) {
          return () => Promise.reject(new BrainError("storage_unavailable", "the store stopped answering"));
        }
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }),
  };
  return switched;
}
