import { BrainError } from "../outcome/errors.ts";
import { deepFreeze } from "../util/freeze.ts";
import { type CommitWakes, follow } from "./follow.ts";
import type { Journal, ReadOptions, SubscribeOptions } from "./journal.ts";
import {
  CHUNKS_PER_WRITE,
  decodeJson,
  decodeRecord,
  encodeBody,
  encodeJson,
  type Head,
  INLINE_MAX,
  join,
  keys,
  split,
  type StoredRecord,
} from "./kv_codec.ts";
import { CommitNotifier } from "./notifier.ts";
import { backoff, commitAtomic } from "./kv_write.ts";
import { watchKey } from "./kv_watch.ts";
import { WakeFile } from "./kv_wake_file.ts";
import { checkRecordBody } from "./frozen_record.ts";
import { closes, opens } from "./open_calls.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "./records.ts";

/** Most records one `append` may hold: each takes up to two of an atomic operation's 1000 mutations. */
export const MAX_RECORDS_PER_APPEND = 400;
/** Inline bytes one atomic commit carries, under Deno KV's 800 KiB mutation limit with room for keys. */
const ATOMIC_BYTES = 640_000;
/** Commits retried, with growing random backoff, after another writer took the head, before `journal_conflict`. */
const MAX_ATTEMPTS = 1_000;

interface CachedHead extends Head {
  versionstamp: string;
}

/** One `append` waiting in its session's queue. */
interface Pending {
  bodies: RecordBody[];
  prepared: Promise<{ stored: StoredRecord[]; records: JournalRecord[]; bytes: number }>;
  /** True once `prepared` has settled, so a ready batch never waits for a slow one behind it. */
  ready: boolean;
  done: PromiseWithResolvers<JournalRecord[]>;
}

/**
 * A durable journal in a Deno KV file. Each commit is one `kv.atomic()` that
 * checks the session head's versionstamp, so two writers, in this process or
 * another, never take the same sequence: the loser re-reads the head and
 * retries. Appends queued behind a running commit of the same session share
 * the next atomic commit, and each still commits all its records or none.
 *
 * `subscribe` follows every writer of the file: it watches the session's head
 * key, which each commit updates, and wakes at once on this instance's own
 * commits. Deno KV's watch misses other processes' commits on a local file, so
 * journals opened by path also announce each commit in a sidecar `<path>.wake`
 * that subscribers watch; without read and write permission for it, another
 * process's commits are seen on the next wake or read.
 *
 * @example
 * ```ts
 * import { KvJournal } from "@aexhq/brain";
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
  #notifier = new CommitNotifier();
  #heads = new Map<string, CachedHead>();
  #queues = new Map<string, { pending: Pending[]; drained: Promise<void> }>();
  /** Releases each running subscription's watches. */
  #watches = new Set<() => Promise<void>>();
  #wakeFile: WakeFile | undefined;
  #closed = false;
  #reads = new Set<Promise<unknown>>();

  /**
   * Wraps an open Deno KV database; the journal closes it on `close()`. Give
   * the database's file `path` so subscribers see other processes' commits.
   */
  constructor(kv: Deno.Kv, path?: string) {
    this.#kv = kv;
    if (path !== undefined && path !== ":memory:") this.#wakeFile = new WakeFile(path);
  }

  /**
   * Opens (creating if needed) the KV file at `path`; `":memory:"` gives a
   * throwaway database. Fails with `permission_denied` or `invalid_argument`.
   */
  static async open(path: string): Promise<KvJournal> {
    if (typeof path !== "string" || path.length === 0) {
      throw new BrainError(
        "invalid_argument",
        `a journal path must be a non-empty string, got ${JSON.stringify(path)}`,
      );
    }
    if (typeof Deno.openKv !== "function") {
      throw new BrainError(
        "unsupported_runtime",
        `cannot open the journal at ${path}: it is a Deno KV file, and Deno KV needs the --unstable-kv flag ` +
          '(or "unstable": ["kv"] in deno.json)',
      );
    }
    try {
      return new KvJournal(await Deno.openKv(path), path);
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
  }

  /** Commits `bodies` atomically, after every earlier append of the session, and returns them with their sequences. */
  append(sessionId: string, bodies: RecordBody[]): Promise<JournalRecord[]> {
    try {
      this.#open();
    } catch (error) {
      return Promise.reject(error);
    }
    if (bodies.length > MAX_RECORDS_PER_APPEND) {
      return Promise.reject(
        new BrainError("invalid_argument", `one append holds at most ${MAX_RECORDS_PER_APPEND} records`),
      );
    }
    const at = Date.now();
    const pending: Pending = {
      bodies,
      prepared: this.#prepare(sessionId, bodies, at),
      ready: false,
      done: Promise.withResolvers(),
    };
    pending.prepared.finally(() => pending.ready = true).catch(() => {});
    const queue = this.#queues.get(sessionId);
    if (queue) queue.pending.push(pending);
    else {
      const started = { pending: [pending], drained: Promise.resolve() };
      this.#queues.set(sessionId, started);
      started.drained = this.#drain(sessionId, started.pending);
    }
    return pending.done.promise;
  }

  /** Encodes the bodies; a record too large to sit inline is written as chunks first, invisible until committed. */
  async #prepare(sessionId: string, bodies: RecordBody[], at: number) {
    const stored: StoredRecord[] = [];
    const records: JournalRecord[] = [];
    let bytes = 0;
    for (const body of bodies) {
      checkRecordBody(body);
      const encoded = encodeBody(body, at);
      records.push(deepFreeze(decodeRecord(encoded, sessionId, 0)));
      if (encoded.byteLength <= INLINE_MAX && bytes + encoded.byteLength <= ATOMIC_BYTES) {
        stored.push(encoded);
        bytes += encoded.byteLength;
      } else {
        stored.push(await this.#writeChunks(sessionId, encoded));
      }
    }
    return { stored, records, bytes };
  }

  async #writeChunks(sessionId: string, bytes: Uint8Array): Promise<StoredRecord> {
    const blob = crypto.randomUUID();
    const chunks = split(bytes);
    for (let first = 0; first < chunks.length; first += CHUNKS_PER_WRITE) {
      await commitAtomic(
        this.#kv,
        (op) =>
          chunks.slice(first, first + CHUNKS_PER_WRITE).forEach((chunk, offset) =>
            op.set(keys.chunk(sessionId, blob, first + offset), chunk)
          ),
      );
    }
    return { chunks: blob, count: chunks.length };
  }

  /** Deletes the chunks of records whose commit failed; they were never visible. */
  async #dropChunks(sessionId: string, stored: StoredRecord[]): Promise<void> {
    const doomed = stored.flatMap((record) =>
      record instanceof Uint8Array
        ? []
        : Array.from({ length: record.count }, (_, index) => keys.chunk(sessionId, record.chunks, index))
    );
    for (let first = 0; first < doomed.length; first += 500) {
      await commitAtomic(this.#kv, (op) => doomed.slice(first, first + 500).forEach((key) => op.delete(key)));
    }
  }

  /** Commits the session's queued appends in order, as many per atomic commit as its limits allow. */
  async #drain(sessionId: string, queue: Pending[]): Promise<void> {
    while (queue.length > 0) {
      const batch: { pending: Pending; prepared: Awaited<Pending["prepared"]> }[] = [];
      let bytes = 0;
      let count = 0;
      while (queue.length > 0) {
        const pending = queue[0];
        if (batch.length > 0 && !pending.ready) break;
        let prepared;
        try {
          prepared = await pending.prepared;
        } catch (error) {
          if (batch.length > 0) break;
          queue.shift();
          pending.done.reject(error);
          continue;
        }
        if (
          batch.length > 0 &&
          (bytes + prepared.bytes > ATOMIC_BYTES || count + pending.bodies.length > MAX_RECORDS_PER_APPEND)
        ) {
          break;
        }
        queue.shift();
        batch.push({ pending, prepared });
        bytes += prepared.bytes;
        count += pending.bodies.length;
      }
      if (batch.length === 0) continue;
      try {
        const committed = await this.#commit(
          sessionId,
          batch.map(({ pending, prepared }) => ({ ...prepared, bodies: pending.bodies })),
        );
        batch.forEach(({ pending }, index) => pending.done.resolve(committed[index]));
        this.#notifier.notify(sessionId);
        this.#wakeFile?.touch();
      } catch (error) {
        for (const { pending } of batch) pending.done.reject(error);
        await this.#dropChunks(sessionId, batch.flatMap(({ prepared }) => prepared.stored)).catch(() => {});
      }
    }
    // In the same synchronous step as the last empty check, so a later append starts a new drain.
    this.#queues.delete(sessionId);
  }

  async #commit(
    sessionId: string,
    batch: { bodies: RecordBody[]; stored: StoredRecord[]; records: JournalRecord[] }[],
  ): Promise<JournalRecord[][]> {
    let head: CachedHead = this.#heads.get(sessionId) ?? await this.#readHead(sessionId);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const { epoch } = head;
      let sequence = head.sequence;
      const committed = batch.map(({ records }) =>
        records.map((record) => deepFreeze({ ...record, sequence: sequence += 1 }))
      );
      const result = await commitAtomic(this.#kv, (op) => {
        op.check({ key: keys.head(sessionId), versionstamp: head.versionstamp });
        batch.forEach(({ bodies, stored }, item) =>
          bodies.forEach((body, index) => {
            const taken = committed[item][index].sequence;
            op.set(keys.record(sessionId, epoch, taken), stored[index]);
            if (opens(body)) op.set(keys.openCall(sessionId, epoch, taken), true);
            const closed = closes(body);
            if (closed !== undefined) op.delete(keys.openCall(sessionId, epoch, closed));
          })
        );
        op.set(keys.head(sessionId), { sequence, epoch } satisfies Head);
      });
      if (result.ok) {
        this.#heads.set(sessionId, { sequence, epoch, versionstamp: result.versionstamp });
        return committed;
      }
      this.#heads.delete(sessionId);
      await backoff(attempt);
      head = await this.#readHead(sessionId);
    }
    throw new BrainError(
      "journal_conflict",
      `session ${sessionId}: another writer kept taking the head; gave up after ${MAX_ATTEMPTS} attempts`,
    );
  }

  async #readHead(sessionId: string): Promise<CachedHead> {
    const entry = await this.#kv.get<Head>(keys.head(sessionId));
    if (entry.value === null) throw new BrainError("session_not_found", `no session ${sessionId}`);
    return { ...entry.value, versionstamp: entry.versionstamp };
  }

  /** Returns committed records in sequence order. */
  read(sessionId: string, { from = 1, limit }: ReadOptions = {}): Promise<JournalRecord[]> {
    return this.#guard(async () => {
      const { sequence, epoch } = await this.#readHead(sessionId);
      const start = Math.max(Math.floor(from), 1);
      if (limit !== undefined && limit <= 0) return [];
      const records: JournalRecord[] = [];
      const entries = this.#kv.list<StoredRecord>(
        { start: keys.record(sessionId, epoch, start), end: keys.record(sessionId, epoch, sequence + 1) },
        limit === undefined ? {} : { limit },
      );
      for await (const entry of entries) {
        records.push(await this.#decode(sessionId, entry.key.at(-1) as number, entry.value));
      }
      return records;
    });
  }

  async #decode(sessionId: string, sequence: number, stored: StoredRecord): Promise<JournalRecord> {
    if (stored instanceof Uint8Array) return deepFreeze(decodeRecord(stored, sessionId, sequence));
    const chunks: Uint8Array[] = [];
    for await (const entry of this.#kv.list<Uint8Array>({ prefix: keys.chunks(sessionId, stored.chunks) })) {
      chunks.push(entry.value);
    }
    if (chunks.length !== stored.count) {
      throw new BrainError(
        "journal_conflict",
        `session ${sessionId}: record ${sequence} has ${chunks.length} of ${stored.count} chunks`,
      );
    }
    return deepFreeze(decodeRecord(join(chunks), sessionId, sequence));
  }

  /** The last committed sequence, or 0. */
  head(sessionId: string): Promise<number> {
    return this.#guard(async () => {
      return (await this.#readHead(sessionId)).sequence;
    });
  }

  /** The started records of Tool and model calls that have not finished, from an index kept in each commit. */
  openCalls(sessionId: string): Promise<JournalRecord[]> {
    return this.#guard(async () => {
      const { epoch } = await this.#readHead(sessionId);
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
    return follow((id, read) => this.read(id, read), () => this.#watchHead(sessionId), sessionId, options);
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

  /** Stores a new session with an empty head. */
  async createSession(meta: SessionMeta): Promise<void> {
    this.#open();
    const head: Head = { sequence: 0, epoch: crypto.randomUUID() };
    const encoded = encodeMeta(meta);
    const result = await commitAtomic(
      this.#kv,
      (op) =>
        op.check({ key: keys.session(meta.id), versionstamp: null }, { key: keys.head(meta.id), versionstamp: null })
          .set(keys.session(meta.id), encoded)
          .set(keys.head(meta.id), head),
    );
    if (!result.ok) throw new BrainError("session_exists", `session ${meta.id} already exists`);
  }

  /** Replaces a session's metadata. */
  async updateSession(meta: SessionMeta): Promise<void> {
    this.#open();
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
  }

  /** The session's metadata, or `undefined`. */
  getSession(id: string): Promise<SessionMeta | undefined> {
    return this.#guard(async () => {
      const entry = await this.#kv.get<Uint8Array>(keys.session(id));
      return entry.value === null ? undefined : deepFreeze(decodeJson<SessionMeta>(entry.value));
    });
  }

  /** Every stored session's metadata. */
  listSessions(): Promise<SessionMeta[]> {
    return this.#guard(async () => {
      const sessions: SessionMeta[] = [];
      for await (const entry of this.#kv.list<Uint8Array>({ prefix: keys.sessions() })) {
        sessions.push(deepFreeze(decodeJson<SessionMeta>(entry.value)));
      }
      return sessions;
    });
  }

  /**
   * Removes a session: its metadata and head go in one commit, so no append
   * lands after it; its records are then deleted in batches.
   */
  async deleteSession(id: string): Promise<void> {
    this.#open();
    await commitAtomic(this.#kv, (op) => op.delete(keys.session(id)).delete(keys.head(id)));
    this.#heads.delete(id);
    this.#notifier.notify(id);
    this.#wakeFile?.touch();
    for (const prefix of keys.owned(id)) {
      let doomed: Deno.KvKey[] = [];
      const flush = () => commitAtomic(this.#kv, (op) => doomed.forEach((key) => op.delete(key)));
      for await (const entry of this.#kv.list({ prefix }, { batchSize: 500 })) {
        doomed.push(entry.key);
        if (doomed.length === 500) {
          await flush();
          doomed = [];
        }
      }
      if (doomed.length > 0) await flush();
    }
  }

  /** Commits every queued append, ends every subscription and closes the KV database. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#queues.values()].map((queue) => queue.drained));
    this.#notifier.close();
    await Promise.allSettled(this.#reads);
    await Promise.all([...this.#watches].map((release) => release()));
    await this.#wakeFile?.close();
    this.#kv.close();
  }

  /** Runs a read so that `close` waits for it instead of closing the database under it. */
  async #guard<T>(read: () => Promise<T>): Promise<T> {
    this.#open();
    const running = read();
    this.#reads.add(running);
    try {
      return await running;
    } finally {
      this.#reads.delete(running);
    }
  }

  #open(): void {
    if (this.#closed) throw new BrainError("journal_closed", "the journal is closed");
  }
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
