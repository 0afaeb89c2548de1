import { BrainError } from "../outcome/errors.ts";
import { paused } from "../util/paused.ts";
import { callAt } from "../util/timer.ts";
import { appendNowOf, type Journal, offerAppendNow, type ReadOptions, type SubscribeOptions } from "./journal.ts";
import type { AcquireOptions, AppendOptions, Lease, StoredLease } from "./lease.ts";
import type { NodeBeat } from "./nodes.ts";
import type { SessionCreateOptions } from "./host_sessions.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "./records.ts";
import { OpeningCommits } from "./opening_commits.ts";

/** Options for owning a session. */
export interface OwnOptions {
  /** The owner's id: one per Brain. */
  owner: string;
  /** How long the lease lasts without renewal; it is renewed a third to five twelfths into it. */
  ttlMs: number;
  /** How long to wait for another owner's lease to end before failing `session_owned`; 0 by default. */
  waitMs?: number;
  /**
   * Aborts when the owner stops (its Brain closes): a wait for the lease ends
   * at once, rejecting with the signal's reason, and a commit whose outcome is
   * being read back is decided by one read made at once.
   */
  signal?: AbortSignal;
}

/**
 * This node's ownership of one session: its lease, renewed in the background,
 * and a view of the journal whose appends to the session carry the lease.
 * Once another owner took the session over (a renewal or an append failed
 * `fenced`), `lost` aborts with that error and nothing more is written.
 */
export class Ownership {
  /** The journal as the owner writes to it: appends to the owned session are fenced by the lease. */
  readonly journal: Journal;
  #journal: Journal;
  #lease: Lease;
  #ttlMs: number;
  #lost = new AbortController();
  #lostBy: BrainError | undefined;
  /** Aborted once the owner stops (see {@linkcode OwnOptions.signal}), releases the session or loses it. */
  #stopping = new AbortController();
  /** Cancels the scheduled renewal. */
  #cancel = () => {};
  #released = false;
  /** The owned session's commits that open calls, for a journal whose commits may have an unknown outcome. */
  readonly #opening: OpeningCommits | undefined;

  private constructor(journal: Journal, lease: Lease, ttlMs: number, signal: AbortSignal | undefined) {
    this.#journal = journal;
    this.#lease = lease;
    this.#ttlMs = ttlMs;
    const fenced = new FencedJournal(journal, this);
    this.journal = fenced;
    // A journal that commits in this process's memory answers every commit: there is nothing to decide.
    if (!appendNowOf(journal)) {
      this.#opening = new OpeningCommits(journal, lease.sessionId, (bodies) => fenced.append(lease.sessionId, bodies));
      fenced.opening = this.#opening;
    }
    // Removed once the ownership ends: a Brain's signal outlives the many sessions it owns in turn.
    if (signal?.aborted) this.#stop();
    else signal?.addEventListener("abort", this.#stop, { once: true, signal: this.#stopping.signal });
    this.#schedule();
  }

  /**
   * Takes the session's lease, waiting up to `waitMs` for another owner's to
   * end; fails `session_owned` if it does not.
   */
  static async take(journal: Journal, sessionId: string, options: OwnOptions): Promise<Ownership> {
    const { owner, ttlMs, waitMs = 0, signal } = options;
    const until = Date.now() + waitMs;
    for (;;) {
      try {
        return new Ownership(journal, await journal.acquire(sessionId, { owner, ttlMs }), ttlMs, signal);
      } catch (error) {
        if (!(error instanceof BrainError) || error.code !== "session_owned" || Date.now() >= until) throw error;
        const expiresAt = (error.details as { expiresAt?: number } | undefined)?.expiresAt ?? 0;
        const pause = Math.max(1, Math.min(until - Date.now(), expiresAt + 1 - Date.now(), POLL_MS));
        if (!await paused(pause, signal)) throw signal!.reason;
      }
    }
  }

  /** The current lease. */
  get lease(): Lease {
    return this.#lease;
  }

  /** Aborts, with the `fenced` error as reason, once another owner took the session over (or it was deleted). */
  get lost(): AbortSignal {
    return this.#lost.signal;
  }

  /** The reason `lost` aborted with, once it has: read on every append, without the signal's getters. */
  get lostBy(): BrainError | undefined {
    return this.#lostBy;
  }

  /**
   * Aborts once the owner stops, releases the session or loses it: a read-back
   * of a commit's doubtful outcome then reads once more at once, and decides.
   */
  get stopping(): AbortSignal {
    return this.#stopping.signal;
  }

  /** Stops renewing and gives the lease up, so another owner may take the session at once. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    this.#cancel();
    this.#stopping.abort();
    this.#opening?.stop();
    if (!this.lost.aborted) await this.#journal.release(this.#lease).catch(() => {});
  }

  /**
   * Marks the session lost to another owner, or deleted; called with the error of a renewal or an append.
   * Either way `lost` aborts `fenced` (a deletion is its cause), so every later write fails alike, whichever
   * of the owner's commits or renewals found the session gone first.
   */
  lose(error: BrainError): void {
    this.#cancel();
    this.#stopping.abort();
    this.#opening?.stop();
    if (this.lost.aborted) return;
    const { sessionId, owner, token } = this.#lease;
    this.#lostBy = error.code === "fenced"
      ? error
      : new BrainError("fenced", `session ${sessionId} was deleted: this node writes no more to it`, {
        cause: error,
        details: { owner, token },
      });
    this.#lost.abort(this.#lostBy);
  }

  /** The owner stops: the commits whose outcome is being decided are decided by one read made at once. */
  #stop = (): void => {
    this.#stopping.abort();
    this.#opening?.hurry();
  };

  #schedule(): void {
    if (this.#released || this.lost.aborted) return;
    // Due times on a grid of a twelfth of the lease: a node's renewals come due together, and a journal that
    // batches them commits many leases at once. Each still renews between a third and five twelfths into its lease.
    const grid = Math.max(1, Math.floor(this.#ttlMs / 12));
    this.#cancel = callAt(Math.ceil((Date.now() + this.#ttlMs / 3) / grid) * grid, () => void this.#renew());
  }

  async #renew(): Promise<void> {
    try {
      const renewed = await this.#journal.renew(this.#lease, this.#ttlMs);
      if (!this.#released) this.#lease = renewed;
    } catch (error) {
      if (isLost(error)) return this.lose(error);
      if (error instanceof BrainError && error.code === "journal_closed") return;
      // A store that failed for a moment: the next renewal tries again, and a takeover meanwhile shows as fenced.
    }
    this.#schedule();
  }
}

/** True for the refusals that say the lease is gone for good: taken over (`fenced`), or deleted with its session. */
function isLost(error: unknown): error is BrainError {
  return error instanceof BrainError && (error.code === "fenced" || error.code === "session_not_found");
}

/** How often a waiting owner tries again, at most: another owner may release before its lease expires. */
const POLL_MS = 100;

/**
 * Aborts once the owner of the session `journal` writes to stops, releases it or
 * loses it (see {@linkcode Ownership.stopping}); undefined for a journal that
 * is no owner's view.
 */
export function ownerStopping(journal: Journal): AbortSignal | undefined {
  return journal instanceof FencedJournal ? journal.ownership.stopping : undefined;
}

/** A journal whose appends to the owned session carry the ownership's lease. */
class FencedJournal implements Journal {
  #inner: Journal;
  #ownership: Ownership;
  /** The ownership whose lease the appends carry. */
  get ownership(): Ownership {
    return this.#ownership;
  }
  /** The append options of the current lease, built once per lease. */
  #leased: AppendOptions | undefined;
  /** Decides the owned session's opening commits whose outcome the store left unknown, when it may. */
  opening: OpeningCommits | undefined;

  constructor(inner: Journal, ownership: Ownership) {
    this.#inner = inner;
    this.#ownership = ownership;
    const innerNow = appendNowOf(inner);
    if (innerNow) {
      offerAppendNow(this, FencedJournal.prototype.append, (sessionId, bodies, answer, options) => {
        const leased = this.#options(sessionId, options);
        try {
          return innerNow(sessionId, bodies, answer, leased);
        } catch (error) {
          if (leased !== options) this.#onRefused(error);
          throw error;
        }
      });
    }
  }

  append(sessionId: string, bodies: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]> {
    let leased: AppendOptions | undefined;
    let appended;
    try {
      leased = this.#options(sessionId, options);
      const send = () => this.#inner.append(sessionId, bodies, leased);
      appended = leased !== options && this.opening ? this.opening.append(bodies, send) : send();
    } catch (error) {
      return Promise.reject(error);
    }
    // Returned as it is: watching it for `fenced` on the side adds no wait to the commit.
    if (leased !== options) appended.catch(this.#onRefused);
    return appended;
  }

  /** The options an append to `sessionId` carries: the current lease's for the owned session; throws once it is lost. */
  #options(sessionId: string, options: AppendOptions | undefined): AppendOptions | undefined {
    const lease = this.#ownership.lease;
    if (sessionId !== lease.sessionId) return options;
    const lost = this.#ownership.lostBy;
    if (lost) throw lost;
    if (this.#leased?.lease !== lease) this.#leased = { lease };
    return this.#leased;
  }

  #onRefused = (error: unknown): void => {
    if (isLost(error)) this.#ownership.lose(error);
  };

  acquire(sessionId: string, options: AcquireOptions): Promise<Lease> {
    return this.#inner.acquire(sessionId, options);
  }
  renew(lease: Lease, ttlMs: number): Promise<Lease> {
    return this.#inner.renew(lease, ttlMs);
  }
  release(lease: Lease): Promise<void> {
    return this.#inner.release(lease);
  }
  holder(sessionId: string): Promise<StoredLease | undefined> {
    return this.#inner.holder(sessionId);
  }
  stranded(): Promise<string[]> {
    return this.#inner.stranded();
  }
  beat(node: string, url: string, ttlMs: number): Promise<void> {
    return this.#inner.beat(node, url, ttlMs);
  }
  nodes(): Promise<NodeBeat[]> {
    return this.#inner.nodes();
  }
  read(sessionId: string, options?: ReadOptions): Promise<JournalRecord[]> {
    return this.#inner.read(sessionId, options);
  }
  head(sessionId: string): Promise<number> {
    return this.#inner.head(sessionId);
  }
  openCalls(sessionId: string): Promise<JournalRecord[]> {
    return this.#inner.openCalls(sessionId);
  }
  subscribe(sessionId: string, options?: SubscribeOptions): AsyncIterable<JournalRecord> {
    return this.#inner.subscribe(sessionId, options);
  }
  createSession(meta: SessionMeta, options?: SessionCreateOptions): Promise<void> {
    return this.#inner.createSession(meta, options);
  }
  updateSession(meta: SessionMeta): Promise<void> {
    return this.#inner.updateSession(meta);
  }
  getSession(id: string): Promise<SessionMeta | undefined> {
    return this.#inner.getSession(id);
  }
  listSessions(): Promise<SessionMeta[]> {
    return this.#inner.listSessions();
  }
  deleteSession(id: string): Promise<void> {
    return this.#inner.deleteSession(id);
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
}
