import type { CommitNotifier } from "./notifier.ts";

/** Where a session is, by the store: its incarnation (epoch) and its last sequence. */
export interface StoredHead {
  epoch: number;
  head: number;
}

/**
 * Wakes subscriptions whose commit announcement never arrived (a LISTEN the
 * database ended, a notification sent while it was being set up again): every
 * `intervalMs`, while any subscription waits, one query asks the store where the
 * followed sessions are, and each session past what its followers have read
 * (or deleted, or created again) is woken. Announced commits cost nothing more:
 * a woken follower reads up to the head, which it then reports with `saw`.
 */
export class MissedCommits {
  #notifier: CommitNotifier;
  #heads: (sessionIds: string[]) => Promise<Map<string, StoredHead>>;
  /** What the followers of each waiting session have read up to. */
  #seen = new Map<string, StoredHead>();
  #timer: ReturnType<typeof setInterval>;
  #checking = false;

  constructor(
    notifier: CommitNotifier,
    heads: (sessionIds: string[]) => Promise<Map<string, StoredHead>>,
    intervalMs: number,
  ) {
    this.#notifier = notifier;
    this.#heads = heads;
    this.#timer = setInterval(() => void this.#check(), intervalMs);
    // A journal left open does not keep its process alive for this.
    Deno.unrefTimer(this.#timer);
  }

  /** A follower of `sessionId`'s incarnation `epoch` has read every record up to `sequence`. */
  saw(sessionId: string, epoch: number, sequence: number): void {
    const seen = this.#seen.get(sessionId);
    if (seen?.epoch === epoch && seen.head >= sequence) return;
    this.#seen.set(sessionId, { epoch, head: sequence });
  }

  /** Stops checking. */
  close(): void {
    clearInterval(this.#timer);
  }

  async #check(): Promise<void> {
    if (this.#checking) return;
    const waiting = new Set(this.#notifier.waiting());
    for (const sessionId of this.#seen.keys()) if (!waiting.has(sessionId)) this.#seen.delete(sessionId);
    if (waiting.size === 0) return;
    this.#checking = true;
    try {
      const ids = [...waiting];
      const heads = await this.#heads(ids);
      for (const sessionId of ids) {
        const stored = heads.get(sessionId);
        const seen = this.#seen.get(sessionId);
        if (!stored || !seen || stored.epoch !== seen.epoch || stored.head > seen.head) {
          this.#notifier.notify(sessionId);
        }
      }
    } catch {
      // The store failed for a moment: the next check asks again.
    } finally {
      this.#checking = false;
    }
  }
}
