import { isInstance } from "../outcome/known_keys.ts";
import { BrainError } from "../outcome/errors.ts";
import { markBuiltIn } from "./built_in.ts";
import { type CommitWakes, follow } from "./follow.ts";
import type { Journal, ReadOptions, SubscribeOptions } from "./journal.ts";
import {
  decodeHead,
  decodeRecord,
  encodeBody,
  encodeHead,
  encodeJson,
  type Fence,
  type Head,
  INLINE_MAX,
  isExpiry,
  isHead,
  join,
  keys,
  keySize,
  OPEN_MARK,
  type PendingBlob,
  storedHost,
  storedLeaseOf,
  type StoredRecord,
} from "./kv_codec.ts";
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
import { backoff, commitAtomic } from "./kv_write.ts";
import { dropBlob, sweptError, sweptMarkers, writeBlob } from "./kv_blobs.ts";
import { storageError } from "./storage_error.ts";
import { watchKey } from "./kv_watch.ts";
import { WakeFile } from "./kv_wake_file.ts";
import { commitKvRenewals, KV_RENEWALS_PER_COMMIT } from "./kv_renewals.ts";
import { RenewalBatches } from "./renewal_batches.ts";
import { countHostSessions } from "./kv_host_sessions.ts";
import { hostLimitError, hostOf, maxHostSessions, type SessionCreateOptions } from "./host_sessions.ts";
import { settledWithin } from "../util/settled_within.ts";
import { checkSessionId } from "../util/names.ts";
import { shownValue } from "../util/shown_value.ts";
import { utf8Length } from "../util/utf8.ts";
import { checkBodies, checkedMeta, frozenRecords } from "./frozen_record.ts";
import { bodyOf } from "./same_body.ts";
import { checkDense, corrupt, storedMeta } from "./stored_record.ts";
import { checkRange } from "./read_options.ts";
import { closes, opens } from "./open_calls.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "./records.ts";

/** Most records one `append` may hold: each takes up to two of an atomic operation's 1000 mutations. */
export const MAX_RECORDS_PER_APPEND = 400;
/** Inline bytes one atomic commit carries, under Deno KV's 800 KiB mutation limit with room for keys. */
const ATOMIC_BYTES = 640_000;
/** Key bytes one atomic commit carries, under Deno KV's 81,920 with room for the head and fence keys. */
const ATOMIC_KEY_BYTES = 72_000;
/** Mutations one atomic commit carries, under Deno KV's 1,000 with room for the head. */
const ATOMIC_MUTATIONS = 990;
/** Commits retried, with growing random backoff, after another writer took the head, before `journal_conflict`. */
const MAX_ATTEMPTS = 1_000;
/**
 * A blob whose chunks were written this long ago and never committed, in a
 * session without a live lease, belongs to a writer that died; `open` deletes it.
 * Leased sessions are swept by each new owner when it takes the lease.
 */
export const ORPHAN_AGE_MS = 60_000;
/** A stand-in epoch for sizing keys before the head is read, as long as the longest (older files hold UUIDs). */
const SIZING_EPOCH = "00000000-0000-0000-0000-000000000000";
/** Key bytes of a record, an open call and a pending marker, but for their session id's UTF-8 bytes. */
const RECORD_KEY_BYTES = keySize(keys.record("", SIZING_EPOCH, 0));
const OPEN_KEY_BYTES = keySize(keys.openCall("", SIZING_EPOCH, 0));
const PENDING_KEY_BYTES = keySize(keys.pending("", SIZING_EPOCH));
/** How long past its expiry a node's heartbeat key is kept before Deno KV deletes it. */
const NODE_KEEP_MS = 60_000;
/** How long closing waits for the database's running operations before it stops waiting for them. */
const CLOSE_WAIT_MS = 1_000;

/**
 * A session's head as this instance last committed or read it. Every change
 * to a session's open-call keys also writes its head, so while a commit's
 * head check passes, `open` is exact for the calls after `openKnownAfter`.
 */
interface CachedHead extends Head {
  versionstamp: string;
  /** Calls after `openKnownAfter`, or read since, that are still open. */
  open: Set<number>;
  openKnownAfter: number;
}

/** An append encoded for commit, with what it adds to an atomic commit's limits. */
interface Prepared {
  bodies: RecordBody[];
  stored: StoredRecord[];
  /** The pending markers of the chunked records among `stored`. */
  markers: readonly Deno.AtomicCheck[];
  records: JournalRecord[];
  bytes: number;
  keyBytes: number;
  mutations: number;
}

/** One `append` waiting in its session's queue. */
interface Pending {
  lease: Lease | undefined;
  /** A promise only while a record too large to sit inline is written as chunks. */
  prepared: Prepared | Promise<Prepared>;
  /** True once `prepared` is no promise or has settled, so a ready batch never waits for a slow one behind it. */
  ready: boolean;
  done: PromiseWithResolvers<JournalRecord[]>;
}

/** The markers of an append with no chunked record. */
const NO_MARKERS: readonly Deno.AtomicCheck[] = Object.freeze([]);

/**
 * A durable journal in a Deno KV file. Each commit is one `kv.atomic()` that
 * checks the session head's versionstamp, so two writers, in this process or
 * another, never take the same sequence: the loser re-reads the head and
 * retries. Appends queued behind a running commit of the same session share
 * the next atomic commit, sized by record count, key and value bytes, and each
 * still commits all its records or none. A leased append also checks the
 * session's fence key, which only a change of owner rewrites; a record ending
 * a call commits only while the call's open-call key exists. Failures of the
 * store itself reject with `storage_full` or `storage_unavailable`.
 *
 * `subscribe` follows every writer of the file: it watches the session's head
 * key, which each commit updates, and wakes at once on this instance's own
 * commits. Deno KV's watch misses other processes' commits on a local file, so
 * journals opened by path also announce each commit in a sidecar `<path>.wake`
 * that subscribers watch. A commit whose writer could not announce it (it died
 * right after the commit, or lacks permission for the sidecar) is seen within a
 * second: subscribers also read again every second.
 *
 * A session's head and open calls are kept next to its records, so a commit
 * writes one page of the file. A file written by earlier journals, which kept
 * them apart, is moved to this layout before the journal's first answer.
 *
 * @example
 * ```ts
 * import { KvJournal } from "@aexhq/brain/journal";
 * const journal = await KvJournal.open(":memory:");
 * try {
 *   await journal.createSession({ id: "s1", createdAt: Date.now(), tools: [] });
 *   const [record] = await journal.append("s1", [{ kind: "tool_returned", call: 1 }]);
 *   console.log(record.sequence); // 1
 * } finally {
 *   await journal.close();
 * }
 * ```
 */
export class KvJournal implements Journal {
  #kv: Deno.Kv;
  #renewals: RenewalBatches;
  #notifier = new CommitNotifier();
  #heads = new Map<string, CachedHead>();
  #queues = new Map<string, { pending: Pending[]; drained: Promise<void> }>();
  /** Releases each running subscription's watches. */
  #watches = new Set<() => Promise<void>>();
  #wakeFile: WakeFile | undefined;
  #closed = false;
  /** The first close(), which every later call settles with. */
  #closedOnce: Promise<void> | undefined;
  /** Every operation on the database but queued appends: `close` waits for them before closing it. */
  #running = new Set<Promise<unknown>>();
  /** Settles once what a file of the earlier layout keeps apart is moved; every operation waits for it. */
  #moved: Promise<void>;
  #isMoved = false;

  /**
   * Wraps an open Deno KV database; the journal closes it on `close()`. Give
   * the database's file `path` so subscribers see other processes' commits.
   */
  constructor(kv: Deno.Kv, path?: string) {
    if (!isInstance(kv, Deno.Kv) || (path !== undefined && typeof path !== "string")) {
      throw new BrainError(
        "invalid_argument",
        "a KvJournal wraps an open Deno.Kv and its path: use await KvJournal.open(path)",
      );
    }
    this.#kv = kv;
    markBuiltIn(this, new.target, KvJournal);
    const moved = this.#moved = this.#moveEarlierLayout().then(() => void (this.#isMoved = true));
    this.#running.add(moved);
    moved.catch(() => {}).finally(() => this.#running.delete(moved));
    this.#renewals = new RenewalBatches(KV_RENEWALS_PER_COMMIT, (batch) => commitKvRenewals(kv, batch));
    if (path !== undefined && path !== ":memory:") this.#wakeFile = new WakeFile(path);
  }

  /**
   * Opens (creating if needed) the KV file at `path`; `":memory:"` gives a
   * throwaway database. Fails with `permission_denied` or `invalid_argument`.
   */
  static async open(path: string): Promise<KvJournal> {
    if (typeof path !== "string" || path.length === 0 || !path.isWellFormed()) {
      // A lone surrogate would be opened as U+FFFD: another file than the one named.
      throw new BrainError(
        "invalid_argument",
        `a journal path must be a non-empty string of well-formed text, got ${shownValue(path)}`,
      );
    }
    if (typeof Deno.openKv !== "function") {
      throw new BrainError(
        "unsupported_runtime",
        `cannot open the journal at ${path}: it is a Deno KV file, and Deno KV needs the --unstable-kv flag ` +
          '(or "unstable": ["kv"] in deno.json)',
      );
    }
    let kv: Deno.Kv;
    try {
      kv = await Deno.openKv(path);
    } catch (error) {
      const denied = error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied;
      if (denied) {
        throw new BrainError(
          "permission_denied",
          `cannot open the journal at ${path}: ${(error as Error).message}; grant --allow-read and ` +
            "--allow-write on its folder (Deno KV and Brain keep sidecar files next to it)",
          { cause: error },
        );
      }
      const folder = await missingFolder(path);
      throw new BrainError(
        "invalid_argument",
        folder === undefined
          ? `cannot open the journal at ${path}: ${(error as Error).message}`
          : `cannot open the journal at ${path}: the folder ${folder} does not exist; ` +
            `create it first, as in await Deno.mkdir(${JSON.stringify(folder)}, { recursive: true })`,
        { cause: error },
      );
    }
    const journal = new KvJournal(kv, path);
    try {
      await journal.#moved;
    } catch (error) {
      kv.close();
      throw storageError(error);
    }
    await journal.#sweepOrphans().catch(() => {});
    return journal;
  }

  /**
   * Moves what a file written before heads and open calls sat next to the
   * records keeps apart. Each session's open calls are copied, then its head
   * moves, each commit checked against the earlier head, so of two journals
   * opening the file at once only one moves it, and a copy cut short is made
   * again on the next open. The earlier open-call keys are then read no more, and deleted.
   */
  async #moveEarlierLayout(): Promise<void> {
    for await (const earlier of this.#kv.list({ prefix: keys.earlierHeads() })) {
      const [, id] = earlier.key;
      // A key no journal wrote (no session id in it) is no session's head: left where it is, read by nothing.
      if (earlier.key.length !== 2 || typeof id !== "string") continue;
      const head = isHead(earlier.value) ? { sequence: earlier.value.sequence, epoch: earlier.value.epoch } : undefined;
      const calls: number[] = [];
      if (head) {
        for await (const open of this.#kv.list({ prefix: keys.earlierOpenCallsOf(id, head.epoch) })) {
          const call = open.key[3];
          if (open.key.length === 4 && Number.isSafeInteger(call)) calls.push(call as number);
        }
      }
      let moved = true;
      for (let first = 0; moved && first < calls.length; first += 500) {
        const some = calls.slice(first, first + 500);
        const result = await commitAtomic(this.#kv, (op) => {
          op.check(earlier);
          for (const call of some) op.set(keys.openCall(id, head!.epoch, call), OPEN_MARK);
        });
        moved = result.ok;
      }
      if (!moved) continue;
      // A head that is none is moved as it is: reading the session still fails journal_corrupt.
      await commitAtomic(this.#kv, (op) => {
        op.check(earlier).set(keys.head(id), head ? encodeHead(head) : earlier.value).delete(earlier.key);
      });
    }
    await this.#deleteListed(keys.earlierOpenCalls());
  }

  /** Deletes every key under `prefix`, 500 to a commit, each once `visit` (when given) has seen its entry. */
  async #deleteListed(prefix: Deno.KvKey, visit?: (entry: Deno.KvEntry<unknown>) => Promise<void>): Promise<void> {
    let doomed: Deno.KvKey[] = [];
    const flush = async () => {
      const batch = doomed;
      doomed = [];
      await commitAtomic(this.#kv, (op) => batch.forEach((key) => op.delete(key)));
    };
    for await (const entry of this.#kv.list({ prefix }, { batchSize: 500 })) {
      await visit?.(entry);
      doomed.push(entry.key);
      if (doomed.length === 500) await flush();
    }
    if (doomed.length > 0) await flush();
  }

  /**
   * Finishes the deletes that were cut short, and deletes the chunks that
   * writers which died left uncommitted in sessions without a live lease.
   */
  async #sweepOrphans(): Promise<void> {
    for await (const entry of this.#kv.list({ prefix: keys.doomedAll() })) {
      const [, sessionId, epoch] = entry.key as [string, string, string];
      await this.#purge(sessionId, epoch);
    }
    const now = Date.now();
    const leases = new Map<string, boolean>();
    for await (const entry of this.#kv.list<PendingBlob>({ prefix: keys.pendings() })) {
      const [, sessionId, blob] = entry.key as [string, string, string];
      if (!entry.value.doomed) {
        if (entry.value.at > now - ORPHAN_AGE_MS) continue;
        // A lease no journal wrote is taken as live: its session's blobs are left, as a live owner's are.
        if (!leases.has(sessionId)) leases.set(sessionId, await this.#storedLease(sessionId).then(live, () => true));
        if (leases.get(sessionId)) continue;
      }
      await dropBlob(this.#kv, sessionId, blob);
    }
  }

  /** Deletes every uncommitted blob of a session; called by its new owner, whose fence no older writer passes. */
  async #sweepSession(sessionId: string): Promise<void> {
    for await (const entry of this.#kv.list({ prefix: keys.pendings(sessionId) })) {
      await dropBlob(this.#kv, sessionId, entry.key.at(-1) as string);
    }
  }

  async #storedLease(sessionId: string): Promise<StoredLease | undefined> {
    const [fence, lease] = await this.#kv.getMany([keys.fence(sessionId), keys.lease(sessionId)]);
    return storedLeaseOf(sessionId, fence.value, lease.value);
  }

  /** Takes the session's lease with the next fencing token, unless another owner's is live; sweeps its orphans. */
  acquire(sessionId: string, options: AcquireOptions): Promise<Lease> {
    return this.#guard(async () => {
      checkSessionId(sessionId);
      checkAcquire(options);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const [fence, lease, head] = await this.#kv.getMany<[Fence, unknown, unknown]>([
          keys.fence(sessionId),
          keys.lease(sessionId),
          keys.head(sessionId),
        ]);
        if (head.value === null) throw new BrainError("session_not_found", `no session ${sessionId}`);
        // Checks the fence too, whose token the next one follows.
        const stored = storedLeaseOf(sessionId, fence.value, lease.value);
        if (live(stored) && stored.owner !== options.owner) throw ownedError(sessionId, stored);
        const next: Fence = { owner: options.owner, token: (fence.value?.token ?? 0) + 1 };
        const expiresAt = Date.now() + options.ttlMs;
        const result = await commitAtomic(
          this.#kv,
          (op) =>
            op.check(fence, lease, head).set(keys.fence(sessionId), next).set(keys.lease(sessionId), { expiresAt }),
        );
        if (!result.ok) {
          await backoff(attempt);
          continue;
        }
        await this.#sweepSession(sessionId);
        return Object.freeze({ sessionId, ...next, expiresAt, fence: result.versionstamp });
      }
      throw new BrainError("journal_conflict", `session ${sessionId}: its lease kept changing`);
    });
  }

  /** Extends a lease that is still the session's; renewals asked for together share one commit. */
  renew(lease: Lease, ttlMs: number): Promise<Lease> {
    return this.#guard(async () => {
      checkLease(lease);
      checkAcquire({ owner: lease.owner, ttlMs });
      return await this.#renewals.renew(lease, ttlMs);
    });
  }

  /** Ends a lease that is still the session's, so another owner may take it at once. */
  release(lease: Lease): Promise<void> {
    return this.#guard(async () => {
      checkLease(lease);
      await commitAtomic(
        this.#kv,
        (op) =>
          op.check({ key: keys.fence(lease.sessionId), versionstamp: lease.fence })
            .set(keys.lease(lease.sessionId), { expiresAt: 0 }),
      );
    });
  }

  /** Commits `bodies` atomically, after every earlier append of the session, and returns them with their sequences. */
  append(sessionId: string, given: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]> {
    let lease: Lease | undefined;
    try {
      this.#open();
      checkSessionId(sessionId);
      checkBodies(given);
      lease = leaseOption(options);
    } catch (error) {
      return Promise.reject(error);
    }
    if (given.length > MAX_RECORDS_PER_APPEND) {
      return Promise.reject(
        new BrainError("invalid_argument", `one append holds at most ${MAX_RECORDS_PER_APPEND} records`),
      );
    }
    const at = Date.now();
    let prepared: Prepared | Promise<Prepared>;
    try {
      // Read once: the records kept, encoded and answered are one copy, whatever the caller's objects do next.
      const records = frozenRecords(given, sessionId, 0, at);
      prepared = this.#prepare(sessionId, records, records.map(bodyOf), at);
    } catch (error) {
      return Promise.reject(error);
    }
    const pending: Pending = { lease, prepared, ready: true, done: Promise.withResolvers() };
    if (prepared instanceof Promise) {
      pending.ready = false;
      const ready = () => void (pending.ready = true);
      prepared.then(ready, ready);
    }
    const queue = this.#queues.get(sessionId);
    if (queue) queue.pending.push(pending);
    else {
      const started = { pending: [pending], drained: Promise.resolve() };
      this.#queues.set(sessionId, started);
      started.drained = this.#drain(sessionId, started.pending);
    }
    return pending.done.promise;
  }

  /**
   * Encodes the bodies and sizes them: an append that alone exceeds what one
   * atomic commit can carry throws `invalid_argument` before anything is
   * written. A record too large to sit inline is written as chunks first,
   * invisible until committed; only then is the answer a promise.
   */
  #prepare(
    sessionId: string,
    records: JournalRecord[],
    bodies: RecordBody[],
    at: number,
  ): Prepared | Promise<Prepared> {
    const idBytes = utf8Length(sessionId);
    const encoded = new Array<Uint8Array>(bodies.length);
    const inline = new Array<boolean>(bodies.length);
    let bytes = 0;
    let keyBytes = 0;
    let mutations = 0;
    let chunked = false;
    for (let index = 0; index < bodies.length; index++) {
      const body = bodies[index];
      const record = encoded[index] = encodeBody(body, at);
      const fits = inline[index] = record.byteLength <= INLINE_MAX && bytes + record.byteLength <= ATOMIC_BYTES;
      const indexed = opens(body) || closes(body) !== undefined;
      if (fits) bytes += record.byteLength;
      else chunked = true;
      keyBytes += RECORD_KEY_BYTES + idBytes + (indexed ? OPEN_KEY_BYTES + idBytes : 0) +
        (fits ? 0 : PENDING_KEY_BYTES + idBytes);
      mutations += 1 + (indexed ? 1 : 0) + (fits ? 0 : 1);
    }
    if (keyBytes > ATOMIC_KEY_BYTES || mutations > ATOMIC_MUTATIONS) {
      throw new BrainError(
        "invalid_argument",
        `session ${sessionId}: an append of ${bodies.length} records takes ${keyBytes} key bytes and ${mutations} ` +
          `writes; one atomic commit holds ${ATOMIC_KEY_BYTES} and ${ATOMIC_MUTATIONS}: append fewer records at once`,
      );
    }
    const prepared = { bodies, stored: encoded, markers: NO_MARKERS, records, bytes, keyBytes, mutations };
    return chunked ? this.#writeChunks(sessionId, prepared, inline) : prepared;
  }

  /** Writes the chunks of the records of `prepared` not `inline`, and stores their blobs in their place. */
  async #writeChunks(sessionId: string, prepared: Prepared, inline: boolean[]): Promise<Prepared> {
    const stored: StoredRecord[] = [];
    const markers: Deno.AtomicCheck[] = [];
    try {
      for (const [index, record] of prepared.stored.entries()) {
        if (inline[index]) {
          stored.push(record);
          continue;
        }
        const written = await writeBlob(this.#kv, sessionId, record as Uint8Array);
        stored.push(written.stored);
        markers.push(written.marker);
      }
    } catch (error) {
      await this.#dropChunks(sessionId, stored).catch(() => {});
      throw error;
    }
    return { ...prepared, stored, markers };
  }

  /** Deletes the chunks of records whose commit failed; they were never visible. */
  async #dropChunks(sessionId: string, stored: StoredRecord[]): Promise<void> {
    for (const record of stored) {
      if (!(record instanceof Uint8Array)) await dropBlob(this.#kv, sessionId, record.chunks);
    }
  }

  /** Commits the session's queued appends in order, as many per atomic commit as its limits allow. */
  async #drain(sessionId: string, queue: Pending[]): Promise<void> {
    // One turn first: the appends made in the same one as the first share its commit.
    await Promise.resolve();
    while (queue.length > 0) {
      const batch: { pending: Pending; prepared: Prepared }[] = [];
      let bytes = 0;
      let count = 0;
      let keyBytes = 0;
      let mutations = 0;
      while (queue.length > 0) {
        const pending = queue[0];
        if (batch.length > 0 && (!pending.ready || pending.lease !== batch[0].pending.lease)) break;
        let prepared = pending.prepared;
        if (prepared instanceof Promise) {
          try {
            prepared = await prepared;
          } catch (error) {
            if (batch.length > 0) break;
            queue.shift();
            pending.done.reject(error);
            continue;
          }
        }
        if (
          batch.length > 0 &&
          (bytes + prepared.bytes > ATOMIC_BYTES || count + prepared.records.length > MAX_RECORDS_PER_APPEND ||
            keyBytes + prepared.keyBytes > ATOMIC_KEY_BYTES || mutations + prepared.mutations > ATOMIC_MUTATIONS)
        ) {
          break;
        }
        queue.shift();
        batch.push({ pending, prepared });
        bytes += prepared.bytes;
        count += prepared.records.length;
        keyBytes += prepared.keyBytes;
        mutations += prepared.mutations;
      }
      if (batch.length === 0) continue;
      try {
        const results = await this.#commit(sessionId, batch[0].pending.lease, batch.map(({ prepared }) => prepared));
        const refused: StoredRecord[] = [];
        batch.forEach(({ pending, prepared }, index) => {
          const result = results[index];
          if (result instanceof BrainError) {
            pending.done.reject(result);
            refused.push(...prepared.stored);
          } else pending.done.resolve(result);
        });
        if (results.some((result) => !(result instanceof BrainError))) {
          this.#notifier.notify(sessionId);
          this.#wakeFile?.touch();
        }
        if (refused.length > 0) await this.#dropChunks(sessionId, refused).catch(() => {});
      } catch (error) {
        for (const { pending } of batch) pending.done.reject(storageError(error));
        await this.#dropChunks(sessionId, batch.flatMap(({ prepared }) => prepared.stored)).catch(() => {});
      }
    }
    // In the same synchronous step as the last empty check, so a later append starts a new drain.
    this.#queues.delete(sessionId);
  }

  /**
   * Commits the items that may commit in one atomic write checked against the
   * head and the writer's fence (or the absence of a live lease); an item
   * ending a call that is no longer open gets `call_finished` instead.
   */
  async #commit(
    sessionId: string,
    lease: Lease | undefined,
    batch: Prepared[],
  ): Promise<(JournalRecord[] | BrainError)[]> {
    let head: CachedHead = this.#heads.get(sessionId) ?? await this.#readHead(sessionId);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      // From here on, `head.open` changes in place; any failure forgets the cached head with it.
      this.#heads.delete(sessionId);
      const { epoch, open } = head;
      const writer = lease ? { key: keys.fence(sessionId), versionstamp: lease.fence } : await this.#unowned(sessionId);
      const unknown = unknownEnds(head, batch);
      if (unknown.length > 0) await this.#readOpen(sessionId, head, unknown);
      const markers = batch.flatMap((item) => item.markers);
      const swept = markers.length === 0
        ? undefined
        : await sweptMarkers(this.#kv, sessionId, head.versionstamp, markers);
      let sequence = head.sequence;
      const results = batch.map(({ bodies, records, markers }) => {
        if (swept && markers.some((marker) => swept.has(marker))) return sweptError(sessionId);
        const refused = endsOnlyOpen(sessionId, bodies, sequence, open);
        if (refused) return refused;
        return records.map((record) => Object.freeze({ ...record, sequence: sequence += 1 }));
      });
      if (sequence === head.sequence) {
        this.#heads.set(sessionId, head);
        return results;
      }
      const result = await commitAtomic(this.#kv, (op) => {
        op.check({ key: keys.head(sessionId), versionstamp: head.versionstamp }, writer);
        batch.forEach(({ bodies, stored }, item) => {
          const committed = results[item];
          if (committed instanceof BrainError) return;
          bodies.forEach((body, index) => {
            const taken = committed[index].sequence;
            const record = stored[index];
            op.set(keys.record(sessionId, epoch, taken), record);
            if (!(record instanceof Uint8Array)) op.delete(keys.pending(sessionId, record.chunks));
            if (opens(body)) op.set(keys.openCall(sessionId, epoch, taken), OPEN_MARK);
            const closed = closes(body);
            if (closed !== undefined) op.delete(keys.openCall(sessionId, epoch, closed));
          });
        });
        op.set(keys.head(sessionId), encodeHead({ sequence, epoch }));
      });
      if (result.ok) {
        head.sequence = sequence;
        head.versionstamp = result.versionstamp;
        this.#heads.set(sessionId, head);
        return results;
      }
      if (lease) {
        const fence = await this.#kv.get(keys.fence(sessionId));
        // Its fence went with the session: deleted (perhaps by another Brain), as the memory and PostgreSQL journals say.
        if (fence.versionstamp === null) throw new BrainError("session_not_found", `session ${sessionId} was deleted`);
        if (fence.versionstamp !== lease.fence) throw fencedError(lease);
      }
      await backoff(attempt);
      head = await this.#readHead(sessionId);
    }
    throw new BrainError(
      "journal_conflict",
      `session ${sessionId}: another writer kept taking the head; gave up after ${MAX_ATTEMPTS} attempts`,
    );
  }

  /** The check an append without a lease commits under: no one holds a live lease, and no one takes it meanwhile. */
  async #unowned(sessionId: string): Promise<Deno.AtomicCheck> {
    const [fence, lease] = await this.#kv.getMany([keys.fence(sessionId), keys.lease(sessionId)]);
    const stored = storedLeaseOf(sessionId, fence.value, lease.value);
    if (live(stored)) throw ownedError(sessionId, stored);
    return { key: keys.lease(sessionId), versionstamp: lease.versionstamp };
  }

  /**
   * Adds to `head.open` those of the `calls` it cannot know that are open,
   * read. The head check of the commit that follows makes this read part of
   * the same atomic write.
   */
  async #readOpen(sessionId: string, head: CachedHead, calls: number[]): Promise<void> {
    for (let first = 0; first < calls.length; first += 10) {
      const some = calls.slice(first, first + 10);
      const entries = await this.#kv.getMany(some.map((call) => keys.openCall(sessionId, head.epoch, call)));
      entries.forEach((entry, index) => entry.versionstamp !== null && head.open.add(some[index]));
    }
  }

  async #readHead(sessionId: string): Promise<CachedHead> {
    if (!this.#isMoved) await this.#moved;
    const entry = await this.#kv.get(keys.head(sessionId));
    if (entry.value === null) throw new BrainError("session_not_found", `no session ${sessionId}`);
    const head = decodeHead(entry.value);
    if (head === undefined) {
      throw new BrainError("journal_corrupt", `session ${sessionId}: its head is no sequence and epoch`, {
        details: { sessionId },
      });
    }
    const { sequence, epoch } = head;
    return { sequence, epoch, versionstamp: entry.versionstamp, open: new Set(), openKnownAfter: sequence };
  }

  /** The session's live lease, if any. */
  holder(sessionId: string): Promise<StoredLease | undefined> {
    return this.#guard(async () => {
      await this.#readHead(checkSessionId(sessionId));
      const stored = await this.#storedLease(sessionId);
      return live(stored) ? stored : undefined;
    });
  }

  /** Sessions once leased whose lease lapsed or was released while calls are open. */
  stranded(): Promise<string[]> {
    return this.#guard(async () => {
      const now = Date.now();
      const unheld: string[] = [];
      for await (const entry of this.#kv.list<{ expiresAt?: unknown } | null>({ prefix: keys.leases() })) {
        // A lease no journal wrote is skipped: no owner can take that session, so none can end its calls.
        const expiresAt = entry.value?.expiresAt;
        if (isExpiry(expiresAt) && expiresAt <= now) unheld.push(entry.key[1] as string);
      }
      // A lapsed or released lease names a session that may have calls open: its head names where to look.
      const ids: string[] = [];
      for (let first = 0; first < unheld.length && ids.length < STRANDED_MAX; first += 10) {
        const some = unheld.slice(first, first + 10);
        const heads = await this.#kv.getMany(some.map((id) => keys.head(id)));
        for (const [index, entry] of heads.entries()) {
          const head = decodeHead(entry.value);
          // Only the live incarnation's calls count: a deleted one's, not purged yet, are no one's to end.
          if (head === undefined || !await this.#hasOpenCalls(some[index], head.epoch)) continue;
          ids.push(some[index]);
          if (ids.length >= STRANDED_MAX) break;
        }
      }
      return ids;
    });
  }

  /** True when the incarnation `epoch` of the session has a call open. */
  async #hasOpenCalls(sessionId: string, epoch: string): Promise<boolean> {
    for await (const _ of this.#kv.list({ prefix: keys.openCalls(sessionId, epoch) }, { limit: 1 })) return true;
    return false;
  }

  /** Keeps `node`'s heartbeat for `ttlMs`; KV deletes it some time after it expired. */
  beat(node: string, url: string, ttlMs: number): Promise<void> {
    return this.#guard(async () => {
      checkBeat(node, url, ttlMs);
      const beat: NodeBeat = { node, url, expiresAt: Date.now() + ttlMs };
      await this.#kv.set(keys.node(node), beat, { expireIn: ttlMs + NODE_KEEP_MS });
    });
  }

  /** The nodes with a live heartbeat. */
  nodes(): Promise<NodeBeat[]> {
    return this.#guard(async () => {
      const now = Date.now();
      const beats: NodeBeat[] = [];
      for await (const entry of this.#kv.list<NodeBeat>({ prefix: keys.nodes() })) {
        if (entry.value.expiresAt > now) beats.push(Object.freeze({ ...entry.value }));
      }
      return beats;
    });
  }

  /** Returns committed records in sequence order. */
  read(sessionId: string, options: ReadOptions = {}): Promise<JournalRecord[]> {
    return this.#guard(() => this.#read(checkSessionId(sessionId), checkRange("read options", options)));
  }

  /**
   * Reads committed records; with `followed`, only while the session is still
   * the incarnation of that epoch (else `session_not_found`: it was deleted).
   */
  async #read(
    sessionId: string,
    { from = 1, limit }: ReadOptions,
    followed?: { epoch?: string },
  ): Promise<JournalRecord[]> {
    const { sequence, epoch } = await this.#readHead(sessionId);
    if (followed) {
      followed.epoch ??= epoch;
      if (followed.epoch !== epoch) throw new BrainError("session_not_found", `session ${sessionId} was deleted`);
    }
    const start = Math.max(Math.floor(from), 1);
    if ((limit !== undefined && limit <= 0) || start > sequence) return [];
    const records: JournalRecord[] = [];
    const entries = this.#kv.list<StoredRecord>(
      { start: keys.record(sessionId, epoch, start), end: keys.record(sessionId, epoch, sequence + 1) },
      limit === undefined ? {} : { limit },
    );
    for await (const entry of entries) {
      records.push(await this.#decode(sessionId, entry.key.at(-1) as number, entry.value));
    }
    try {
      checkDense(records, sessionId, start, limit === undefined || records.length < limit ? sequence : undefined);
    } catch (error) {
      // A delete removes a session's head first, then its records: a read it overtook lost them, no corruption.
      const now = await this.#kv.get(keys.head(sessionId));
      if (decodeHead(now.value)?.epoch !== epoch) {
        throw new BrainError("session_not_found", `session ${sessionId} was deleted`);
      }
      throw error;
    }
    return records;
  }

  async #decode(sessionId: string, sequence: number, stored: StoredRecord): Promise<JournalRecord> {
    if (stored instanceof Uint8Array) return decodeRecord(stored, sessionId, sequence);
    if (typeof stored !== "object" || stored === null || typeof stored.chunks !== "string") {
      throw corrupt(sessionId, sequence, "is stored as neither JSON bytes nor chunks");
    }
    const chunks: Uint8Array[] = [];
    for await (const entry of this.#kv.list({ prefix: keys.chunks(sessionId, stored.chunks) })) {
      if (!(entry.value instanceof Uint8Array)) throw corrupt(sessionId, sequence, "has a chunk that is no bytes");
      chunks.push(entry.value);
    }
    if (chunks.length !== stored.count) {
      throw new BrainError(
        "journal_conflict",
        `session ${sessionId}: record ${sequence} has ${chunks.length} of ${stored.count} chunks`,
      );
    }
    return decodeRecord(join(chunks), sessionId, sequence);
  }

  /** The last committed sequence, or 0. */
  head(sessionId: string): Promise<number> {
    return this.#guard(async () => {
      return (await this.#readHead(checkSessionId(sessionId))).sequence;
    });
  }

  /** The started records of Tool and model calls that have not finished, from an index kept in each commit. */
  openCalls(sessionId: string): Promise<JournalRecord[]> {
    return this.#guard(async () => {
      const { epoch } = await this.#readHead(checkSessionId(sessionId));
      const calls: JournalRecord[] = [];
      for await (const entry of this.#kv.list({ prefix: keys.openCalls(sessionId, epoch) })) {
        const sequence = entry.key.at(-1) as number;
        const record = await this.#kv.get<StoredRecord>(keys.record(sessionId, epoch, sequence));
        if (record.value !== null) calls.push(await this.#decode(sessionId, sequence, record.value));
      }
      return calls;
    });
  }

  /** Yields committed records from `from` on, then each new commit, by any writer of the file. */
  subscribe(sessionId: string, options?: SubscribeOptions): AsyncIterable<JournalRecord> {
    const followed: { epoch?: string } = {};
    return follow(
      // A follower reads on while the journal closes, until its subscriptions end: it sees what the close commits.
      (id, read) => this.#guard(() => this.#read(id, read, followed), !this.#notifier.closed),
      () => this.#watchHead(sessionId),
      sessionId,
      options,
    );
  }

  /** Wakes on each change of the session's head; the watch stream ends with the subscription or the journal. */
  #watchHead(sessionId: string): CommitWakes {
    if (this.#closed) return { next: () => Promise.resolve(false), closed: () => true, close: () => {} };
    const wakeFile = this.#wakeFile;
    wakeFile?.acquire();
    const watch = watchKey(
      this.#kv,
      keys.head(sessionId),
      () => wakeFile ? Promise.race([this.#notifier.next(sessionId), wakeFile.next()]) : this.#notifier.next(sessionId),
    );
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      this.#watches.delete(release);
      await watch.close();
      await wakeFile?.release();
    };
    this.#watches.add(release);
    return { next: watch.next, closed: () => this.#notifier.closed, close: release };
  }

  /** Stores a new session with an empty head, counted under its host in the same commit. */
  createSession(given: SessionMeta, options?: SessionCreateOptions): Promise<void> {
    return this.#guard(async () => {
      const meta = checkedMeta(given);
      const max = maxHostSessions(options);
      const host = hostOf(meta);
      const head: Head = { sequence: 0, epoch: newEpoch() };
      const encoded = encodeMeta(meta);
      if (host !== undefined) await countHostSessions(this.#kv);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const count = host === undefined ? undefined : await this.#kv.get<number>(keys.hostSessions(host));
        const counted = count?.value ?? 0;
        if (host !== undefined && max !== undefined && counted >= max) throw hostLimitError(host, max);
        const result = await commitAtomic(this.#kv, (op) => {
          op.check({ key: keys.session(meta.id), versionstamp: null }, { key: keys.head(meta.id), versionstamp: null })
            .set(keys.session(meta.id), encoded)
            .set(keys.head(meta.id), encodeHead(head));
          if (count) op.check(count).set(count.key, counted + 1);
        });
        if (result.ok) {
          this.#heads.set(meta.id, { ...head, versionstamp: result.versionstamp, open: new Set(), openKnownAfter: 0 });
          return;
        }
        const taken = await this.#kv.getMany([keys.session(meta.id), keys.head(meta.id)]);
        if (!count || taken.some((entry) => entry.versionstamp !== null)) {
          throw new BrainError("session_exists", `session ${meta.id} already exists`);
        }
        // Another session of the host was created or deleted meanwhile: counted again.
        await backoff(attempt);
      }
      throw new BrainError("journal_conflict", `session ${meta.id}: its host's sessions kept changing`);
    });
  }

  /** Replaces a session's metadata. */
  updateSession(given: SessionMeta): Promise<void> {
    return this.#guard(async () => {
      const meta = checkedMeta(given);
      const encoded = encodeMeta(meta);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const current = await this.#kv.get(keys.session(meta.id));
        if (current.versionstamp === null) throw new BrainError("session_not_found", `no session ${meta.id}`);
        const result = await commitAtomic(
          this.#kv,
          (op) => op.check(current).set(keys.session(meta.id), encoded),
        );
        if (result.ok) return;
      }
      throw new BrainError("journal_conflict", `session ${meta.id}: its metadata kept changing`);
    });
  }

  /** The session's metadata, or `undefined`. */
  getSession(id: string): Promise<SessionMeta | undefined> {
    return this.#guard(async () => {
      const entry = await this.#kv.get<Uint8Array>(keys.session(checkSessionId(id)));
      return entry.value === null ? undefined : storedMeta(entry.value, id);
    });
  }

  /** Every stored session's metadata, in id order (the order of its keys). */
  listSessions(): Promise<SessionMeta[]> {
    return this.#guard(async () => {
      const sessions: SessionMeta[] = [];
      for await (const entry of this.#kv.list<Uint8Array>({ prefix: keys.sessions() })) {
        sessions.push(storedMeta(entry.value, entry.key[1] as string));
      }
      return sessions;
    });
  }

  /**
   * Removes a session: its metadata, head and lease go in one commit, so no
   * append lands after it, together with a mark naming the incarnation; its
   * records, open calls and chunks are then deleted in batches, by epoch, so a
   * session created again under the same id meanwhile keeps its own. A delete
   * cut short (the process died) is finished by the next `open`.
   */
  deleteSession(id: string): Promise<void> {
    return this.#guard(async () => {
      checkSessionId(id);
      for (let attempt = 0;; attempt++) {
        const [head, session] = await this.#kv.getMany<[unknown, Uint8Array]>([keys.head(id), keys.session(id)]);
        if (head.value === null) return;
        // A damaged head names no epoch: the session is deleted all the same, its records left unread under theirs.
        const epoch = decodeHead(head.value)?.epoch;
        const host = session.value === null ? undefined : storedHost(session.value);
        if (host !== undefined) await countHostSessions(this.#kv);
        const count = host === undefined ? undefined : await this.#kv.get<number>(keys.hostSessions(host));
        const result = await commitAtomic(this.#kv, (op) => {
          op.check(head).delete(keys.session(id)).delete(keys.head(id)).delete(keys.fence(id)).delete(keys.lease(id));
          if (typeof epoch === "string") op.set(keys.doomed(id, epoch), true);
          if (typeof count?.value === "number" && count.value > 0) op.check(count).set(count.key, count.value - 1);
        });
        if (result.ok) {
          this.#heads.delete(id);
          this.#notifier.notify(id);
          this.#wakeFile?.touch();
          return typeof epoch === "string" ? await this.#purge(id, epoch) : undefined;
        }
        if (attempt >= MAX_ATTEMPTS) throw new BrainError("journal_conflict", `session ${id}: its head kept changing`);
        await backoff(attempt);
      }
    });
  }

  /** Deletes what a deleted incarnation left: each record's chunks before the record, its open calls, then its mark. */
  async #purge(id: string, epoch: string): Promise<void> {
    // The open calls' keys sort after the records, under the same prefix.
    await this.#deleteListed(keys.records(id, epoch), async (entry) => {
      // Only a record stored in chunks names a blob; any other value (a hand's edit) is deleted as it is.
      const chunks = (entry.value as { chunks?: unknown } | null)?.chunks;
      if (typeof chunks === "string") await dropBlob(this.#kv, id, chunks);
    });
    await commitAtomic(this.#kv, (op) => op.delete(keys.doomed(id, epoch)));
  }

  /**
   * Commits every queued append, ends every subscription and closes the KV
   * database. A file another process holds locked (a writer paused in the
   * middle of its commit) keeps Deno KV waiting for as long as the lock is
   * held, and closing the database under such a wait blocks the whole process:
   * after {@linkcode CLOSE_WAIT_MS} the journal closes without waiting, and
   * closes the database once what still runs on it settles.
   */
  close(): Promise<void> {
    return this.#closedOnce ??= this.#close();
  }

  async #close(): Promise<void> {
    this.#closed = true;
    const queued = Promise.allSettled([...this.#queues.values()].map((queue) => queue.drained));
    const drained = await settledWithin(queued, CLOSE_WAIT_MS);
    this.#notifier.close();
    const running = Promise.allSettled([queued, ...this.#running]);
    const settled = drained && await settledWithin(running, CLOSE_WAIT_MS);
    await Promise.all([...this.#watches].map((release) => release()));
    await this.#wakeFile?.close();
    if (settled) this.#kv.close();
    else running.then(() => this.#kv.close());
  }

  /**
   * Runs an operation so that `close` waits for it instead of closing the
   * database under it; `whileClosing`, also once `close` has begun.
   */
  async #guard<T>(operation: () => Promise<T>, whileClosing = false): Promise<T> {
    if (!whileClosing) this.#open();
    const running = this.#isMoved ? operation() : this.#moved.then(operation);
    this.#running.add(running);
    try {
      return await running;
    } catch (error) {
      throw storageError(error);
    } finally {
      this.#running.delete(running);
    }
  }

  #open(): void {
    if (this.#closed) throw new BrainError("journal_closed", "the journal is closed");
  }
}

/** The calls the bodies of `batch` end that `head.open` cannot know: opened before it, and not since. */
function unknownEnds(head: CachedHead, batch: Prepared[]): number[] {
  const unknown: number[] = [];
  for (const { bodies } of batch) {
    for (const body of bodies) {
      const call = closes(body);
      if (call !== undefined && call <= head.openKnownAfter && !head.open.has(call)) unknown.push(call);
    }
  }
  return unknown;
}

/**
 * `call_finished` when `bodies`, committed after `head`, end a call that is not
 * open (or end one twice), leaving `open` as it was; else undefined, with
 * `open` updated for the next item.
 */
function endsOnlyOpen(
  sessionId: string,
  bodies: RecordBody[],
  head: number,
  open: Set<number>,
): BrainError | undefined {
  const changes: { call: number; opened: boolean }[] = [];
  for (const [index, body] of bodies.entries()) {
    const ended = closes(body);
    if (ended !== undefined) {
      if (!open.delete(ended)) {
        for (const { call, opened } of changes.reverse()) opened ? open.delete(call) : open.add(call);
        return new BrainError("call_finished", `session ${sessionId}: call ${ended} is not open`);
      }
      changes.push({ call: ended, opened: false });
    }
    if (opens(body)) {
      open.add(head + index + 1);
      changes.push({ call: head + index + 1, opened: true });
    }
  }
  return undefined;
}

/**
 * 12 random hex digits (48 bits): enough to tell apart the incarnations of one
 * session id, and short, because every record key carries its epoch.
 */
function newEpoch(): string {
  return crypto.randomUUID().replaceAll("-", "").slice(0, 12);
}

/** The folder `path` would live in when it does not exist; undefined when it does or cannot be checked. */
async function missingFolder(path: string): Promise<string | undefined> {
  const folder = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) || "/" : ".";
  try {
    await Deno.stat(folder);
    return undefined;
  } catch (error) {
    return error instanceof Deno.errors.NotFound ? folder : undefined;
  }
}

/** A session's metadata as one KV value; `payload_too_large` past {@linkcode INLINE_MAX} (a KV value holds 64 KiB). */
function encodeMeta(meta: SessionMeta): Uint8Array {
  const encoded = encodeJson(meta);
  if (encoded.byteLength > INLINE_MAX) {
    throw new BrainError(
      "payload_too_large",
      `session ${meta.id}: its metadata (the placed Tools' declarations) is ${encoded.byteLength} bytes, over the ${INLINE_MAX} a KV journal holds`,
      { details: { bytes: encoded.byteLength, maxBytes: INLINE_MAX } },
    );
  }
  return encoded;
}
