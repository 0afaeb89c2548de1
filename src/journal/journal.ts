import type { AcquireOptions, AppendOptions, Lease, StoredLease } from "./lease.ts";
import type { NodeBeat } from "./nodes.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "./records.ts";
import type { SessionCreateOptions } from "./host_sessions.ts";

/** Options for reading a session's records. */
export interface ReadOptions {
  /** First sequence to return (inclusive), an integer from 1; defaults to 1. */
  from?: number;
  /** Most records to return, an integer from 0. */
  limit?: number;
}

/** Options for following a session's records as they commit. */
export interface SubscribeOptions {
  /** First sequence to yield (inclusive); defaults to 1. */
  from?: number;
  /** Ends the iteration when aborted. */
  signal?: AbortSignal;
}

/**
 * The durable truth of every session: ordered records with dense sequences.
 * A record is visible to `read` and `subscribe` only after `append` commits it;
 * `append` commits all its bodies atomically or none of them.
 *
 * A session has at most one owner at a time, holding its {@linkcode Lease}.
 * An append with a lease commits only while that lease is the session's
 * current one (else `fenced`); an append without one only while no one holds
 * a live lease (else `session_owned`). A record that ends a call
 * (`tool_call_finished`, `model_call_finished`) commits only while the call is
 * open, checked in the same atomic write (else `call_finished`): a call has
 * exactly one terminal record.
 *
 * A session deleted and created again under the same id is a new incarnation:
 * leases and subscriptions of the old one never reach the new one (a lease of
 * the old one is `fenced`, a subscription to it ends).
 *
 * A Brain given a journal other than its own stores checks every answer: one no store
 * gives fails `journal_corrupt`; a thrown value other than a `BrainError`, or
 * an answer not given within the Brain's `leaseMs`, fails
 * `storage_unavailable`. Throw a `BrainError` for the refusals named here.
 */
export interface Journal {
  /** Commits `bodies` in order and returns them with their sequences. */
  append(sessionId: string, bodies: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]>;
  /**
   * Takes the session's lease with a greater fencing token: fails with
   * `session_owned` while another owner's lease is live, `session_not_found`
   * for an unknown session.
   */
  acquire(sessionId: string, options: AcquireOptions): Promise<Lease>;
  /** Extends a lease by `ttlMs` from now; fails with `fenced` once it was taken over. */
  renew(lease: Lease, ttlMs: number): Promise<Lease>;
  /** Gives a lease up so another owner may take the session at once; a lease already taken over is left alone. */
  release(lease: Lease): Promise<void>;
  /** The session's live lease as stored (owner, token, expiry), or `undefined` while no one holds one. */
  holder(sessionId: string): Promise<StoredLease | undefined>;
  /**
   * Ids of sessions (up to 100) with calls still open whose owner's lease lapsed
   * (the owner died or stopped) or was released with them open (the owner could
   * not commit their ends, or an intent it was not told of landed): the calls a
   * new owner ends `unknown`. A session never leased is no one's to recover.
   */
  stranded(): Promise<string[]>;
  /**
   * Records that Brain node `node` is alive and serves hosts at `url` for the
   * next `ttlMs`: nodes sharing a journal find each other, and the owner of a
   * session, through these heartbeats alone.
   */
  beat(node: string, url: string, ttlMs: number): Promise<void>;
  /** The nodes whose last heartbeat has not expired; expired ones age out. */
  nodes(): Promise<NodeBeat[]>;
  /** Returns committed records in sequence order. */
  read(sessionId: string, options?: ReadOptions): Promise<JournalRecord[]>;
  /** The last committed sequence, or 0 for an empty session. */
  head(sessionId: string): Promise<number>;
  /**
   * The `tool_call_started` and `model_call_started` records of calls that have
   * no `tool_call_finished` / `model_call_finished` yet, in sequence order.
   */
  openCalls(sessionId: string): Promise<JournalRecord[]>;
  /** Yields committed records from `from` on, then each new one as it commits. */
  subscribe(sessionId: string, options?: SubscribeOptions): AsyncIterable<JournalRecord>;
  /**
   * Stores a new session; fails with `session_exists` if the id is taken, and
   * `limit_exceeded` past `options.maxHostSessions` sessions of its host.
   */
  createSession(meta: SessionMeta, options?: SessionCreateOptions): Promise<void>;
  /** Replaces a session's metadata; fails with `session_not_found`. */
  updateSession(meta: SessionMeta): Promise<void>;
  /** The session's metadata, or `undefined`. */
  getSession(id: string): Promise<SessionMeta | undefined>;
  /** Every stored session's metadata, in id order (byte by byte). */
  listSessions(): Promise<SessionMeta[]>;
  /** Removes a session and its records. */
  deleteSession(id: string): Promise<void>;
  /** Releases the journal; later calls fail with `journal_closed`. */
  close(): Promise<void>;
}

/** The key under which a journal keeps its {@linkcode SyncAppend}. */
const appendNow: unique symbol = Symbol("appendNow");

/**
 * A journal's synchronous append: commits exactly as `append` does and returns
 * what `answer` makes of the commit, or throws what `append` would reject with.
 * No record is built that Brain does not ask for: a call's event, result and
 * finish need only their sequences. Only Brain calls it, with bodies it
 * built to their types and `options` from a lease the journal issued: neither
 * is checked for shape again, but the commit is still refused, as `append`'s
 * is, when its lease is no longer the session's or a finish ends no open call.
 */
export type AppendNow = <T>(
  sessionId: string,
  bodies: RecordBody[],
  answer: CommitAnswer<T>,
  options?: AppendOptions,
) => T;

/** What a synchronous append answers, made from the sequence of the commit's first record and the commit's time. */
export type CommitAnswer<T> = (first: number, at: number) => T;

/** The answer of the commit's first sequence. */
export function firstSequence(first: number): number {
  return first;
}

/** A journal's synchronous append and the `append` method it stands for. */
interface SyncAppend {
  readonly append: Journal["append"];
  readonly now: AppendNow;
}

/**
 * Gives `journal`, whose store commits in this process's memory, the
 * synchronous append `now` that does the work of its `append` method `append`.
 * Brain commits a call's records through it (see {@linkcode appendNowOf}), so
 * a commit costs no turn of the event loop. It is no part of the journal's
 * public surface: a hidden property, left out of copies.
 */
export function offerAppendNow(journal: Journal, append: Journal["append"], now: AppendNow): void {
  Object.defineProperty(journal, appendNow, { value: { append, now } satisfies SyncAppend });
}

/**
 * The journal's synchronous append, if it offers one and its `append` is still
 * the one it stands for: a subclass, proxy or wrapper that replaces `append`
 * (to count, delay or fail commits) keeps every commit going through it.
 */
export function appendNowOf(journal: Journal): AppendNow | undefined {
  const sync = (journal as { [appendNow]?: SyncAppend })[appendNow];
  return sync !== undefined && journal.append === sync.append ? sync.now : undefined;
}
