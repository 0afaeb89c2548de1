import { BrainError } from "../outcome/errors.ts";
import { IntSet } from "../util/int_set.ts";
import { promised } from "../util/promised.ts";
import { checkSessionId } from "../util/names.ts";
import { markBuiltIn } from "./built_in.ts";
import { follow } from "./follow.ts";
import { checkBodies, checkedMeta, frozenRecords } from "./frozen_record.ts";
import { checkRange } from "./read_options.ts";
import { closes, opens } from "./open_calls.ts";
import { type CommitAnswer, type Journal, offerAppendNow, type ReadOptions, type SubscribeOptions } from "./journal.ts";
import {
  type AcquireOptions,
  type AppendOptions,
  checkAcquire,
  checkLease,
  fencedError,
  type Lease,
  leaseOption,
  live,
  ownedError,
  type StoredLease,
} from "./lease.ts";
import { CommitNotifier } from "./notifier.ts";
import { checkBeat, type NodeBeat, STRANDED_MAX } from "./nodes.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "./records.ts";
import { RecordList } from "./record_list.ts";
import { hostLimitError, hostOf, maxHostSessions, type SessionCreateOptions } from "./host_sessions.ts";

/**
 * True while a memory journal commits: a getter in a record it reads that
 * appends (to it or to another memory journal, whose records pack through the
 * same scratch) is refused, not interleaved with it.
 */
let committing = false;

interface StoredSession {
  meta: SessionMeta;
  records: RecordList;
  /** Sequences of the calls started and not yet ended. */
  open: IntSet;
  lease?: StoredLease;
}

/**
 * The embedded default journal: ordered records in this process's memory.
 * Commits are synchronous, so sequences are dense without locking.
 *
 * @example
 * ```ts
 * import { MemoryJournal } from "@aexhq/brain/journal";
 * const journal = new MemoryJournal();
 * await journal.createSession({ id: "s1", createdAt: Date.now(), tools: [] });
 * const [record] = await journal.append("s1", [{ kind: "tool_returned", call: 1 }]);
 * console.log(record.sequence); // 1
 * ```
 */
export class MemoryJournal implements Journal {
  #sessions = new Map<string, StoredSession>();
  /** Sessions per host id their metadata names. */
  #hostSessions = new Map<string, number>();
  #notifier = new CommitNotifier();
  #nodes = new Map<string, NodeBeat>();
  /** The last fencing token issued: journal-wide, so a re-created session never reissues an old incarnation's. */
  #token = 0;
  #closed = false;

  /** Commits `bodies` atomically and returns them with their sequences. */
  append(sessionId: string, bodies: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]> {
    try {
      return Promise.resolve(this.#commit(sessionId, bodies, leaseOption(options), undefined));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** An empty journal. */
  constructor() {
    markBuiltIn(this, new.target, MemoryJournal);
    offerAppendNow(
      this,
      MemoryJournal.prototype.append,
      (sessionId, bodies, answer, options) => this.#commit(sessionId, bodies, options?.lease, answer),
    );
  }

  /**
   * Commits `bodies`. Given an `answer`, it packs them straight from the bodies
   * and returns what `answer` makes of the commit; else (or when a body is not
   * one the list packs) it keeps deep-frozen copies, which `append` returns.
   */
  #commit<T>(sessionId: string, bodies: RecordBody[], lease: Lease | undefined, answer: CommitAnswer<T>): T;
  #commit(sessionId: string, bodies: RecordBody[], lease: Lease | undefined, answer: undefined): JournalRecord[];
  #commit<T>(
    sessionId: string,
    bodies: RecordBody[],
    lease: Lease | undefined,
    answer: CommitAnswer<T> | undefined,
  ): T | JournalRecord[] {
    if (committing) {
      throw new BrainError("invalid_argument", `session ${sessionId}: an append began while another read its records`);
    }
    committing = true;
    try {
      return this.#committed(sessionId, bodies, lease, answer);
    } finally {
      committing = false;
    }
  }

  #committed<T>(
    sessionId: string,
    bodies: RecordBody[],
    lease: Lease | undefined,
    answer: CommitAnswer<T> | undefined,
  ): T | JournalRecord[] {
    // A synchronous append (given an answer) commits bodies Brain built to their types: only `append`'s are checked.
    if (!answer) checkBodies(bodies);
    const session = this.#session(sessionId);
    checkWriter(sessionId, session.lease, lease);
    const start = session.records.length + 1;
    checkCloses(sessionId, session.open, bodies, start);
    const at = Date.now();
    let committed: readonly (RecordBody | JournalRecord)[] = bodies, records: JournalRecord[] | undefined;
    if (!answer || !session.records.pushBodies(bodies, at)) {
      committed = records = frozenRecords(bodies, sessionId, start, at);
      for (let index = 0; index < records.length; index++) session.records.push(records[index]);
    }
    // Only now that every record is kept: a refused append leaves the open calls as they were.
    for (let index = 0; index < committed.length; index++) {
      const record = committed[index];
      const ended = closes(record);
      if (ended !== undefined) session.open.delete(ended);
      else if (opens(record)) session.open.add(start + index);
    }
    this.#notifier.notify(sessionId);
    return answer ? answer(start, at) : records!;
  }

  /** Returns committed records in sequence order. */
  read(sessionId: string, options: ReadOptions = {}): Promise<JournalRecord[]> {
    return promised(() => slice(this.#session(sessionId), checkRange("read options", options)));
  }

  /** The last committed sequence, or 0. */
  head(sessionId: string): Promise<number> {
    return promised(() => this.#session(sessionId).records.length);
  }

  /** The `tool_call_started` records of calls without a `tool_call_finished`. */
  openCalls(sessionId: string): Promise<JournalRecord[]> {
    return promised(() => {
      const session = this.#session(sessionId);
      return session.open.values().map((sequence) => session.records.at(sequence - 1));
    });
  }

  /** Takes the session's lease unless another owner's is live. */
  acquire(sessionId: string, options: AcquireOptions): Promise<Lease> {
    return promised(() => {
      checkAcquire(options);
      const session = this.#session(sessionId);
      if (live(session.lease) && session.lease.owner !== options.owner) throw ownedError(sessionId, session.lease);
      session.lease = {
        owner: options.owner,
        token: ++this.#token,
        expiresAt: Date.now() + options.ttlMs,
      };
      return leaseOf(sessionId, session.lease);
    });
  }

  /** Extends a lease that is still the session's current one. */
  renew(lease: Lease, ttlMs: number): Promise<Lease> {
    return promised(() => {
      checkLease(lease);
      checkAcquire({ owner: lease.owner, ttlMs });
      const session = this.#session(lease.sessionId);
      if (session.lease?.token !== lease.token) throw fencedError(lease);
      session.lease = { ...session.lease, expiresAt: Date.now() + ttlMs };
      return leaseOf(lease.sessionId, session.lease);
    });
  }

  /** Gives the lease up if it is still current. */
  release(lease: Lease): Promise<void> {
    return promised(() => {
      this.#open();
      checkLease(lease);
      const session = this.#sessions.get(lease.sessionId);
      if (session?.lease?.token === lease.token) session.lease = { ...session.lease, expiresAt: 0 };
    });
  }

  /** The session's live lease, if any. */
  holder(sessionId: string): Promise<StoredLease | undefined> {
    return promised(() => {
      const { lease } = this.#session(sessionId);
      return live(lease) ? { ...lease } : undefined;
    });
  }

  /** Sessions once leased whose lease lapsed or was released while calls are open. */
  stranded(): Promise<string[]> {
    return promised(() => {
      this.#open();
      const now = Date.now();
      return [...this.#sessions.entries()]
        .filter(([, { lease, open }]) => lease && lease.expiresAt <= now && open.size > 0)
        .slice(0, STRANDED_MAX)
        .map(([id]) => id);
    });
  }

  /** Keeps `node`'s heartbeat for `ttlMs`. */
  beat(node: string, url: string, ttlMs: number): Promise<void> {
    return promised(() => {
      this.#open();
      checkBeat(node, url, ttlMs);
      this.#nodes.set(node, Object.freeze({ node, url, expiresAt: Date.now() + ttlMs }));
    });
  }

  /** The nodes with a live heartbeat; expired ones are forgotten. */
  nodes(): Promise<NodeBeat[]> {
    return promised(() => {
      this.#open();
      const now = Date.now();
      for (const [node, beat] of this.#nodes) if (beat.expiresAt <= now) this.#nodes.delete(node);
      return [...this.#nodes.values()];
    });
  }

  /** Yields committed records from `from` on, then each new commit, of the incarnation of the session it first read. */
  subscribe(sessionId: string, options?: SubscribeOptions): AsyncIterable<JournalRecord> {
    let followed: StoredSession | undefined;
    return follow(
      (id, read) =>
        promised(() => {
          const session = this.#session(id);
          followed ??= session;
          if (session !== followed) throw new BrainError("session_not_found", `session ${id} was deleted`);
          return slice(session, read);
        }),
      () => this.#notifier.wakes(sessionId),
      sessionId,
      options,
    );
  }

  /** Stores a new session, past none of its host's limit. */
  createSession(given: SessionMeta, options?: SessionCreateOptions): Promise<void> {
    return promised(() => {
      this.#open();
      const meta = checkedMeta(given);
      const max = maxHostSessions(options);
      if (this.#sessions.has(meta.id)) {
        throw new BrainError("session_exists", `session ${meta.id} already exists`);
      }
      const host = hostOf(meta);
      if (host !== undefined) {
        const count = this.#hostSessions.get(host) ?? 0;
        if (max !== undefined && count >= max) throw hostLimitError(host, max);
        this.#hostSessions.set(host, count + 1);
      }
      this.#sessions.set(meta.id, { meta, records: new RecordList(meta.id), open: new IntSet() });
    });
  }

  /** Replaces a session's metadata. */
  updateSession(meta: SessionMeta): Promise<void> {
    return promised(() => {
      const checked = checkedMeta(meta);
      this.#session(checked.id).meta = checked;
    });
  }

  /** The session's metadata, or `undefined`. */
  getSession(id: string): Promise<SessionMeta | undefined> {
    return promised(() => {
      this.#open();
      return this.#sessions.get(checkSessionId(id))?.meta;
    });
  }

  /** Every stored session's metadata, in id order. */
  listSessions(): Promise<SessionMeta[]> {
    return promised(() => {
      this.#open();
      // In id order, as every store lists them.
      return [...this.#sessions.values()].map((session) => session.meta).sort(byId);
    });
  }

  /** Removes a session and its records. */
  deleteSession(id: string): Promise<void> {
    return promised(() => {
      this.#open();
      checkSessionId(id);
      const host = this.#sessions.has(id) ? hostOf(this.#sessions.get(id)!.meta) : undefined;
      const count = host === undefined ? undefined : this.#hostSessions.get(host);
      if (count) this.#hostSessions.set(host!, count - 1);
      this.#sessions.delete(id);
      this.#notifier.notify(id);
    });
  }

  /** Ends every subscription; later calls fail with `journal_closed`. */
  close(): Promise<void> {
    this.#closed = true;
    this.#notifier.close();
    return Promise.resolve();
  }

  #open(): void {
    if (this.#closed) throw new BrainError("journal_closed", "the journal is closed");
  }

  #session(id: string): StoredSession {
    this.#open();
    const session = this.#sessions.get(id);
    // Only an id no session can have is looked at further: what no store keeps is the caller's argument.
    if (!session) throw new BrainError("session_not_found", `no session ${checkSessionId(id)}`);
    return session;
  }
}

function slice(session: StoredSession, { from = 1, limit }: ReadOptions): JournalRecord[] {
  const start = Math.max(from, 1) - 1;
  return session.records.slice(start, limit === undefined ? undefined : start + limit);
}

function leaseOf(sessionId: string, stored: StoredLease): Lease {
  return Object.freeze({ sessionId, ...stored, fence: String(stored.token) });
}

/** Throws `call_finished` unless each record of `bodies` that ends a call ends one that is open (or opens in `bodies`). */
function checkCloses(sessionId: string, open: IntSet, bodies: RecordBody[], start: number): void {
  for (let index = 0; index < bodies.length; index++) {
    const ended = closes(bodies[index]);
    if (ended === undefined) continue;
    const opened = Number.isSafeInteger(ended) && ended >= start && ended < start + index &&
      opens(bodies[ended - start]);
    if (!(open.has(ended) || opened) || closedBefore(bodies, index, ended)) {
      throw new BrainError("call_finished", `session ${sessionId}: call ${ended} is not open`);
    }
  }
}

function closedBefore(bodies: RecordBody[], index: number, call: number): boolean {
  for (let earlier = 0; earlier < index; earlier++) if (closes(bodies[earlier]) === call) return true;
  return false;
}

/** Throws unless a commit with `lease` (or none) may write while the session's lease is `stored`. */
function checkWriter(sessionId: string, stored: StoredLease | undefined, lease: Lease | undefined): void {
  if (lease) {
    if (stored?.token !== lease.token || stored.owner !== lease.owner) throw fencedError(lease);
  } else if (live(stored)) throw ownedError(sessionId, stored);
}

/** Orders session metadata by id, code unit by code unit (ids are ASCII names, so byte order too). */
function byId(a: SessionMeta, b: SessionMeta): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
