import postgres from "postgres";
import { allKeys, readOptions } from "../outcome/known_keys.ts";
import { errorText } from "../util/error_text.ts";
import { BrainError } from "../outcome/errors.ts";
import { markBuiltIn } from "./built_in.ts";
import { follow } from "./follow.ts";
import { checkBodies, checkedMeta, frozenRecords } from "./frozen_record.ts";
import { bodyOf } from "./same_body.ts";
import { checkRange } from "./read_options.ts";
import { checkDense, parseStored, storedMeta, storedRecord } from "./stored_record.ts";
import type { Journal, ReadOptions, SubscribeOptions } from "./journal.ts";
import {
  type AcquireOptions,
  type AppendOptions,
  checkAcquire,
  checkLease,
  fencedError,
  type Lease,
  leaseOption,
  ownedError,
  type StoredLease,
} from "./lease.ts";
import { CommitNotifier } from "./notifier.ts";
import { MissedCommits, type StoredHead } from "./missed_commits.ts";
import { type Renewal, RenewalBatches } from "./renewal_batches.ts";
import { checkBeat, type NodeBeat, STRANDED_MAX } from "./nodes.ts";
import { closes, opens } from "./open_calls.ts";
import { JournalSockets } from "./postgres_sockets.ts";
import {
  CALL_NOT_OPEN,
  CHANNEL,
  COMMIT_FUNCTION,
  CREATE_FUNCTION,
  createSchema,
  HOST_FULL,
  META_HOST,
} from "./postgres_schema.ts";
import { hostLimitError, hostOf, maxHostSessions, type SessionCreateOptions } from "./host_sessions.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "./records.ts";
import { isPostgresUrl } from "./postgres_url.ts";
import { storageError } from "./storage_error.ts";
import { settledWithin } from "../util/settled_within.ts";
import { checkSessionId } from "../util/names.ts";
import { shownValue } from "../util/shown_value.ts";
import { paused } from "../util/paused.ts";

/** How long past its expiry a node's heartbeat row is kept. */
const NODE_KEEP_MS = 60_000;
/** How long closing waits for a database that does not answer before destroying the connections. */
const CLOSE_WAIT_MS = 2_000;
/** The default {@linkcode PostgresJournalOptions.idleTransactionMs}. */
const IDLE_TRANSACTION_MS = 5_000;
/** How often followed sessions are checked for commits whose NOTIFY never arrived. */
const MISSED_CHECK_MS = 1_000;
/** Lease renewals one statement extends at most. */
const RENEWALS_PER_STATEMENT = 500;
/** The longest pause before the pool connects again to a database it lost. */
const RECONNECT_MAX_MS = 1_000;
/** The default {@linkcode PostgresJournalOptions.answerTimeoutMs}. */
const ANSWER_TIMEOUT_MS = 10_000;
/** How long a commit whose answer was lost is sent again while the database does not answer (a restart, say). */
const RESEND_MS = 5_000;

type Sql = postgres.Sql;

/** Options for {@linkcode PostgresJournal.open}. */
export interface PostgresJournalOptions {
  /** Connections the journal's pool keeps at most, besides the one it listens on; 10 by default. */
  maxConnections?: number;
  /** The schema the journal's tables live in, created if missing; `public` by default. */
  schema?: string;
  /**
   * How long the database lets a transaction of this journal's connections sit
   * idle before it ends it, in ms; 5 s by default. The journal itself never
   * leaves one open between round trips (each commit is one statement), so a
   * process that pauses (SIGSTOP, a long GC, a suspended VM) holds no lock that
   * keeps the next owner from its sessions; this bounds any other.
   */
  idleTransactionMs?: number;
  /**
   * How long a connection may stay silent after the journal asked it something,
   * in ms, before it is given up: its query is then asked again on another
   * connection (a commit safely, by its name), rather than waiting for an answer
   * a link that stays up lost. 10 s by default; longer than any lock wait.
   */
  answerTimeoutMs?: number;
}

/**
 * A durable journal in PostgreSQL, shared by any number of processes and
 * machines. Each append is one statement, a call of the database function
 * `brain_commit_v2`: it advances the session's head only where the writer's
 * fence still holds (its lease's token, or no live lease for a lease-less
 * append), ends only calls that are still open, inserts the records and
 * announces the commit with `NOTIFY`, which wakes every subscriber in every
 * process, all atomically (a subscriber whose notification was lost reads the
 * commit within a second); no transaction is ever left open across round
 * trips, so the database may end a connection at any moment. A commit whose
 * connection was lost after it was sent is sent again, for up to 5 s while the
 * database does not answer: the function answers where the first sending
 * landed if it did, so the append resolves or fails knowing, and never lands
 * twice. Processes of the previous version keep committing through
 * `brain_commit_v1`. Lease times are
 * the database's clock; renewals asked for together share one statement. The
 * schema (tables `brain_sessions`, `brain_records`, `brain_open_calls`,
 * `brain_host_sessions`, the create and commit functions) is created, or
 * upgraded, on open.
 *
 * @example
 * ```ts ignore
 * import { PostgresJournal } from "@aexhq/brain/journal";
 * const journal = await PostgresJournal.open("postgres://brain@127.0.0.1:5432/brain");
 * try {
 *   await journal.createSession({ id: "s1", createdAt: Date.now(), tools: [] });
 *   const [record] = await journal.append("s1", [{ kind: "tool_returned", call: 1 }]);
 *   console.log(record.sequence); // 1
 * } finally {
 *   await journal.close();
 * }
 * ```
 */
export class PostgresJournal implements Journal {
  #sql: Sql;
  #sockets: JournalSockets;
  #notifier = new CommitNotifier();
  #tails = new Map<string, Promise<unknown>>();
  #running = new Set<Promise<unknown>>();
  #unlisten: (() => Promise<void>) | undefined;
  #missed: MissedCommits | undefined;
  #renewals = new RenewalBatches(RENEWALS_PER_STATEMENT, (batch) => this.#renewBatch(batch));
  #closed = false;
  /** The first close(), which every later call settles with. */
  #closedOnce: Promise<void> | undefined;
  /** Aborted as the journal closes: a commit waiting to be sent again stops waiting. */
  #closing = new AbortController();

  private constructor(sql: Sql, sockets: JournalSockets) {
    if (!isSql(sql)) {
      throw new BrainError("invalid_argument", "a PostgresJournal is opened with await PostgresJournal.open(url)");
    }
    this.#sql = sql;
    this.#sockets = sockets;
    markBuiltIn(this, new.target, PostgresJournal);
  }

  /**
   * Connects to the database at `url` (`postgres://user:password@host:port/db`),
   * creates the schema if it is missing and listens for commits. Fails with
   * `invalid_argument` for a URL that is not `postgres://` or `postgresql://`,
   * `storage_unavailable` when the database cannot be reached.
   */
  static async open(url: string, options: PostgresJournalOptions = {}): Promise<PostgresJournal> {
    if (!isPostgresUrl(url)) {
      throw new BrainError(
        "invalid_argument",
        `a PostgreSQL journal needs a postgres:// URL, got ${
          typeof url === "string" ? JSON.stringify(url) : typeof url
        }`,
      );
    }
    const {
      maxConnections = 10,
      schema = "public",
      idleTransactionMs = IDLE_TRANSACTION_MS,
      answerTimeoutMs = ANSWER_TIMEOUT_MS,
    } = readOptions(
      "PostgreSQL journal options",
      options,
      allKeys<PostgresJournalOptions>({
        maxConnections: true,
        schema: true,
        idleTransactionMs: true,
        answerTimeoutMs: true,
      }),
    );
    if (!Number.isSafeInteger(maxConnections) || maxConnections <= 0) {
      throw new BrainError(
        "invalid_argument",
        `maxConnections must be a positive integer, got ${shownValue(maxConnections)}`,
      );
    }
    if (typeof schema !== "string" || !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
      throw new BrainError(
        "invalid_argument",
        `a schema name is lower-case letters, digits and _, got ${shownValue(schema)}`,
      );
    }
    if (!Number.isSafeInteger(idleTransactionMs) || idleTransactionMs <= 0) {
      throw new BrainError(
        "invalid_argument",
        `idleTransactionMs must be a positive integer, got ${shownValue(idleTransactionMs)}`,
      );
    }
    if (!Number.isSafeInteger(answerTimeoutMs) || answerTimeoutMs <= 0) {
      throw new BrainError(
        "invalid_argument",
        `answerTimeoutMs must be a positive integer, got ${shownValue(answerTimeoutMs)}`,
      );
    }
    const sockets = new JournalSockets(answerTimeoutMs);
    // postgres.js takes a socket factory, though its types do not name the option.
    const opening = { socket: sockets.open };
    let sql: postgres.Sql;
    try {
      sql = postgres(url, {
        ...opening,
        max: maxConnections,
        onnotice: () => {},
        connect_timeout: 10,
        // Fetching array types runs on every new connection, and rejects unhandled (killing the process) when the
        // database ends the connection meanwhile; the journal sends no arrays of its own types.
        fetch_types: false,
        backoff: reconnectDelay,
        connection: {
          application_name: "brain",
          search_path: schema,
          idle_in_transaction_session_timeout: idleTransactionMs,
        },
      });
    } catch (error) {
      // A URL the driver cannot read (a malformed %-escape, say); not echoed, since it may hold a password.
      throw new BrainError("invalid_argument", `the PostgreSQL URL cannot be read: ${errorText(error)}`);
    }
    const journal = new PostgresJournal(sql, sockets);
    try {
      await createSchema(sql, schema);
      // Notifications sent while the listening connection was down are lost: each (re)connect wakes every follower.
      const listening = await sql.listen(
        CHANNEL,
        (sessionId) => journal.#notifier.notify(sessionId),
        () => journal.#notifier.notifyAll(),
      );
      journal.#unlisten = listening.unlisten;
      journal.#missed = new MissedCommits(journal.#notifier, (ids) => journal.#storedHeads(ids), MISSED_CHECK_MS);
    } catch (error) {
      sockets.close();
      await sql.end({ timeout: 0 }).catch(() => {});
      throw storageError(error);
    }
    return journal;
  }

  /** Commits `bodies` atomically, after every earlier append of the session made here. */
  append(sessionId: string, bodies: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]> {
    let lease: Lease | undefined;
    try {
      checkSessionId(sessionId);
      lease = leaseOption(options);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#closed) return Promise.reject(new BrainError("journal_closed", "the journal is closed"));
    // Copied now, as records to be numbered: the commit waits for the session's earlier ones, and the caller's
    // objects may change meanwhile.
    let records: JournalRecord[];
    try {
      checkBodies(bodies);
      records = frozenRecords(bodies, sessionId, 0, 0);
    } catch (error) {
      return Promise.reject(error);
    }
    // Made before close, it is committed: close waits for the session's appends.
    const previous = this.#tails.get(sessionId) ?? Promise.resolve();
    const committed = previous.then(() => this.#guard(() => this.#commit(sessionId, records, lease), true));
    const tail = committed.catch(() => {});
    this.#tails.set(sessionId, tail);
    tail.then(() => this.#tails.get(sessionId) === tail && this.#tails.delete(sessionId));
    return committed;
  }

  /**
   * One statement: the commit function checks the fence and the calls ended,
   * and writes everything, so no transaction is ever left open on a connection
   * the database may end between two round trips.
   */
  async #commit(sessionId: string, unnumbered: JournalRecord[], lease: Lease | undefined): Promise<JournalRecord[]> {
    const bodies = unnumbered.map(bodyOf);
    const at = Date.now();
    const { opening, ended, enders } = callChanges(sessionId, bodies);
    // Sent as a JSON array of the records' texts (the driver serializes a json parameter).
    const texts = bodies.map((body) => JSON.stringify(body));
    const [owner, token] = lease ? [lease.owner, lease.token] : [null, null];
    const commit = crypto.randomUUID();
    const send = (resend: boolean) =>
      this.#once`SELECT first_sequence::float8 AS first, holder, holder_expires_at::float8 AS "expiresAt"
        FROM ${this.#sql(COMMIT_FUNCTION)}(${sessionId}::text, ${owner}::text, ${token}::bigint, ${commit}::text,
          ${resend}::boolean, ${texts}::json, ${at}::bigint, ${integers(opening)}::bigint[],
          ${integers(ended)}::bigint[], ${integers(enders)}::bigint[])`;
    let row;
    try {
      [row] = await send(false).catch((error) => {
        if (!connectionLost(error)) throw error;
        return this.#resent(() => send(true), error);
      });
    } catch (error) {
      throw (error as { code?: unknown }).code === CALL_NOT_OPEN
        ? new BrainError("call_finished", (error as Error).message)
        : error;
    }
    if (row.first === null) {
      throw refusal(
        sessionId,
        row.holder === null ? undefined : { owner: row.holder, expiresAt: row.expiresAt },
        lease,
      );
    }
    const first: number = row.first;
    const records = unnumbered.map((record, index) => Object.freeze({ ...record, sequence: first + index, at }));
    this.#notifier.notify(sessionId);
    return records;
  }

  /**
   * Sends again, until {@linkcode RESEND_MS} passed or the journal closes, a
   * commit whose connection was lost after it may have been sent (`lost`): the
   * commit function answers where the first sending landed, if it did, so the
   * commit's outcome is known once the database answers (after a restart, say)
   * and it never lands twice. Fails with the last loss when it never answers.
   */
  async #resent(send: () => Promise<postgres.Row[]>, lost: unknown): Promise<postgres.Row[]> {
    const until = Date.now() + RESEND_MS;
    for (let attempt = 0; !this.#closed; attempt++) {
      try {
        return await send();
      } catch (error) {
        if (!(connectionLost(error) || unreachable(error))) throw error;
        lost = error;
      }
      const pause = Math.min(reconnectDelay(attempt) * 1_000, until - Date.now());
      if (pause <= 0 || !await paused(pause, this.#closing.signal)) break;
    }
    throw lost;
  }

  /** Takes the session's lease with the next token unless another owner's is live, by the database's clock. */
  acquire(sessionId: string, options: AcquireOptions): Promise<Lease> {
    return this.#guard(async () => {
      checkSessionId(sessionId);
      checkAcquire(options);
      const [taken] = await this.#query`UPDATE brain_sessions
        SET owner = ${options.owner}, token = nextval('brain_tokens'), expires_at = ${now(this.#sql)} + ${
        Math.ceil(options.ttlMs)
      }
        WHERE id = ${sessionId} AND (expires_at <= ${now(this.#sql)} OR owner = ${options.owner})
        RETURNING token::float8 AS token, expires_at::float8 AS "expiresAt"`;
      if (!taken) {
        const [holder] = await this.#query`SELECT owner, expires_at::float8 AS "expiresAt"
          FROM brain_sessions WHERE id = ${sessionId}`;
        throw refusal(sessionId, holder as Pick<StoredLease, "owner" | "expiresAt"> | undefined, undefined);
      }
      return leaseOf(sessionId, options.owner, taken.token, taken.expiresAt);
    });
  }

  /** Extends a lease that is still the session's; renewals asked for together share one statement. */
  renew(lease: Lease, ttlMs: number): Promise<Lease> {
    return this.#guard(async () => {
      checkLease(lease);
      checkAcquire({ owner: lease.owner, ttlMs });
      return await this.#renewals.renew(lease, ttlMs);
    });
  }

  /**
   * One statement extends every lease of `batch` that is still its session's,
   * by the database's clock; the others fail `fenced`.
   */
  async #renewBatch(batch: Renewal[]): Promise<void> {
    const leases = batch.map(({ lease, ttlMs }) => ({
      id: lease.sessionId,
      owner: lease.owner,
      token: lease.token,
      ttl: Math.ceil(ttlMs),
    }));
    const rows = await this.#query`UPDATE brain_sessions s SET expires_at = ${now(this.#sql)} + r.ttl
      FROM json_to_recordset(${this.#sql.json(leases)}::json) AS r(id text, owner text, token bigint, ttl bigint)
      WHERE s.id = r.id AND s.owner = r.owner AND s.token = r.token
      RETURNING s.id, s.token::float8 AS token, s.expires_at::float8 AS "expiresAt"`;
    // A session renewed twice in the batch is updated once: each of its renewals takes that row.
    const renewed = new Map(rows.map((row) => [row.id as string, row]));
    for (const { lease, done } of batch) {
      const row = renewed.get(lease.sessionId);
      if (row?.token === lease.token) done.resolve(leaseOf(lease.sessionId, lease.owner, lease.token, row.expiresAt));
      else done.reject(fencedError(lease));
    }
  }

  /** Ends a lease that is still the session's, so another owner may take it at once. */
  release(lease: Lease): Promise<void> {
    return this.#guard(async () => {
      checkLease(lease);
      await this.#query`UPDATE brain_sessions SET expires_at = 0
        WHERE id = ${lease.sessionId} AND owner = ${lease.owner} AND token = ${lease.token}`;
    });
  }

  /** The session's live lease, by the database's clock, if any. */
  holder(sessionId: string): Promise<StoredLease | undefined> {
    return this.#guard(async () => {
      checkSessionId(sessionId);
      const [row] = await this.#query`SELECT owner, token::float8 AS token, expires_at::float8 AS "expiresAt",
        expires_at > ${now(this.#sql)} AS live FROM brain_sessions WHERE id = ${sessionId}`;
      if (!row) throw new BrainError("session_not_found", `no session ${sessionId}`);
      return row.live ? { owner: row.owner, token: row.token, expiresAt: row.expiresAt } : undefined;
    });
  }

  /** Sessions once leased whose lease lapsed or was released, by the database's clock, while calls are open. */
  stranded(): Promise<string[]> {
    return this.#guard(async () => {
      // Driven by the open calls, which are few: released sessions are many, and outside the index of leased ones.
      const rows = await this.#query`SELECT s.id FROM brain_sessions s
        WHERE s.id IN (SELECT o.session_id FROM brain_open_calls o)
          AND s.token > 0 AND s.expires_at <= ${now(this.#sql)}
        ORDER BY s.expires_at LIMIT ${STRANDED_MAX}`;
      return rows.map((row) => row.id as string);
    });
  }

  /** Keeps `node`'s heartbeat for `ttlMs` by the database's clock; beats expired a minute ago are deleted. */
  beat(node: string, url: string, ttlMs: number): Promise<void> {
    return this.#guard(async () => {
      checkBeat(node, url, ttlMs);
      await this.#query`INSERT INTO brain_nodes (node, url, expires_at)
        VALUES (${node}, ${url}, ${now(this.#sql)} + ${Math.ceil(ttlMs)})
        ON CONFLICT (node) DO UPDATE SET url = excluded.url, expires_at = excluded.expires_at`;
      await this.#query`DELETE FROM brain_nodes WHERE expires_at < ${now(this.#sql)} - ${NODE_KEEP_MS}`;
    });
  }

  /** The nodes with a live heartbeat, by the database's clock. */
  nodes(): Promise<NodeBeat[]> {
    return this.#guard(async () => {
      const rows = await this.#query`SELECT node, url, expires_at::float8 AS "expiresAt" FROM brain_nodes
        WHERE expires_at > ${now(this.#sql)} ORDER BY node`;
      return rows.map(({ node, url, expiresAt }) => Object.freeze({ node, url, expiresAt }));
    });
  }

  /** Returns committed records in sequence order. */
  read(sessionId: string, options: ReadOptions = {}): Promise<JournalRecord[]> {
    return this.#guard(() => this.#read(checkSessionId(sessionId), checkRange("read options", options)));
  }

  /**
   * Reads committed records; with `followed`, only of the session's incarnation
   * of that epoch (a re-created session is another: `session_not_found`).
   */
  async #read(
    sessionId: string,
    { from = 1, limit }: ReadOptions,
    followed?: { epoch?: number },
  ): Promise<JournalRecord[]> {
    const start = Math.max(Math.floor(from), 1);
    if (followed && followed.epoch === undefined) followed.epoch = await this.#epoch(sessionId);
    if (limit !== undefined && limit <= 0) {
      await this.#head(sessionId);
      return [];
    }
    const epoch = followed?.epoch;
    // The head comes in the same statement (one snapshot) as the records: the last records' absence shows.
    const rows = await this.#query`SELECT s.head::float8 AS head, r.sequence::float8 AS sequence, r.body,
        r.at::float8 AS at
      FROM brain_sessions s
      LEFT JOIN brain_records r ON r.session_id = s.id AND r.sequence >= ${start}
      WHERE s.id = ${sessionId} ${epoch === undefined ? this.#sql`` : this.#sql`AND s.epoch = ${epoch}`}
      ORDER BY r.sequence
      ${limit === undefined ? this.#sql`` : this.#sql`LIMIT ${Math.floor(limit)}`}`;
    // No rows: the session may be gone, or followed into an incarnation that was deleted.
    if (rows.length === 0) {
      const current = await this.#epoch(sessionId);
      if (epoch !== undefined && current !== epoch) {
        throw new BrainError("session_not_found", `session ${sessionId} was deleted`);
      }
    }
    const records = rows.flatMap((row) =>
      row.sequence === null ? [] : [decode(row.body, sessionId, row.sequence, row.at)]
    );
    if (epoch !== undefined) this.#missed?.saw(sessionId, epoch, records.at(-1)?.sequence ?? start - 1);
    const head = rows.length > 0 && (limit === undefined || records.length < limit) ? rows[0].head : undefined;
    checkDense(records, sessionId, start, head);
    return records;
  }

  /** Where the sessions `ids` are, in one query: their epoch and head, for those that exist. */
  #storedHeads(ids: string[]): Promise<Map<string, StoredHead>> {
    return this.#guard(async () => {
      const rows = await this.#query`SELECT id, epoch::float8 AS epoch, head::float8 AS head FROM brain_sessions
        WHERE id IN (SELECT json_array_elements_text(${this.#sql.json(ids)}::json))`;
      return new Map(rows.map((row) => [row.id as string, { epoch: row.epoch, head: row.head }]));
    });
  }

  /** The epoch of the session's current incarnation; `session_not_found` without one. */
  async #epoch(sessionId: string): Promise<number> {
    const [row] = await this.#query`SELECT epoch::float8 AS epoch FROM brain_sessions WHERE id = ${sessionId}`;
    if (!row) throw new BrainError("session_not_found", `no session ${sessionId}`);
    return row.epoch;
  }

  /** The last committed sequence, or 0. */
  head(sessionId: string): Promise<number> {
    return this.#guard(() => this.#head(checkSessionId(sessionId)));
  }

  async #head(sessionId: string): Promise<number> {
    const [row] = await this.#query`SELECT head::float8 AS head FROM brain_sessions WHERE id = ${sessionId}`;
    if (!row) throw new BrainError("session_not_found", `no session ${sessionId}`);
    return row.head;
  }

  /** The started records of calls that have not finished. */
  openCalls(sessionId: string): Promise<JournalRecord[]> {
    return this.#guard(async () => {
      await this.#head(checkSessionId(sessionId));
      const rows = await this.#query`SELECT r.sequence::float8 AS sequence, r.body, r.at::float8 AS at
        FROM brain_open_calls o JOIN brain_records r ON r.session_id = o.session_id AND r.sequence = o.call
        WHERE o.session_id = ${sessionId} ORDER BY r.sequence`;
      return rows.map((row) => decode(row.body, sessionId, row.sequence, row.at));
    });
  }

  /** Yields committed records from `from` on, then each commit of any process, woken by `NOTIFY`. */
  subscribe(sessionId: string, options?: SubscribeOptions): AsyncIterable<JournalRecord> {
    const followed: { epoch?: number } = {};
    return follow(
      (id, read) => this.#guard(() => this.#read(id, read, followed)),
      () => this.#notifier.wakes(sessionId),
      sessionId,
      options,
    );
  }

  /** Stores a new session, counted under its host in the same statement. */
  createSession(given: SessionMeta, options?: SessionCreateOptions): Promise<void> {
    return this.#guard(async () => {
      const meta = checkedMeta(given);
      const max = maxHostSessions(options) ?? null;
      const host = hostOf(meta) ?? null;
      let row;
      try {
        [row] = await this.#once`SELECT created FROM ${this.#sql(CREATE_FUNCTION)}(${meta.id}::text,
          ${JSON.stringify(meta)}::text, ${host}::text, ${max}::bigint)`;
      } catch (error) {
        if ((error as { code?: unknown }).code === HOST_FULL) throw hostLimitError(host!, max!);
        throw error;
      }
      if (!row.created) throw new BrainError("session_exists", `session ${meta.id} already exists`);
    });
  }

  /** Replaces a session's metadata. */
  updateSession(given: SessionMeta): Promise<void> {
    return this.#guard(async () => {
      const meta = checkedMeta(given);
      const updated = await this.#query`UPDATE brain_sessions SET meta = ${JSON.stringify(meta)}
        WHERE id = ${meta.id} RETURNING id`;
      if (updated.length === 0) throw new BrainError("session_not_found", `no session ${meta.id}`);
    });
  }

  /** The session's metadata, or `undefined`. */
  getSession(id: string): Promise<SessionMeta | undefined> {
    return this.#guard(async () => {
      const [row] = await this.#query`SELECT meta FROM brain_sessions WHERE id = ${checkSessionId(id)}`;
      return row ? storedMeta(row.meta, id) : undefined;
    });
  }

  /** Every stored session's metadata, in id order (byte by byte, whatever the database's collation). */
  listSessions(): Promise<SessionMeta[]> {
    return this.#guard(async () => {
      const rows = await this.#query`SELECT id, meta FROM brain_sessions ORDER BY id COLLATE "C"`;
      return rows.map((row) => storedMeta(row.meta, row.id));
    });
  }

  /** Removes a session, its records and its open calls in one statement, and counts it off its host. */
  deleteSession(id: string): Promise<void> {
    return this.#guard(async () => {
      checkSessionId(id);
      // One statement: every data-modifying part of it runs, atomically.
      // Not sent again: the session may have been created again meanwhile, and a second run would delete that one.
      await this.#once`WITH session AS (DELETE FROM brain_sessions WHERE id = ${id} RETURNING ${
        this.#sql.unsafe(META_HOST)
      } AS host),
          records AS (DELETE FROM brain_records WHERE session_id = ${id}),
          calls AS (DELETE FROM brain_open_calls WHERE session_id = ${id}),
          hosts AS (UPDATE brain_host_sessions SET sessions = sessions - 1 WHERE host = (SELECT host FROM session))
        SELECT pg_notify(${CHANNEL}, ${id})`;
      this.#notifier.notify(id);
    });
  }

  /**
   * Lets running commits finish, ends every subscription and closes the
   * connections. A database that does not answer within {@linkcode CLOSE_WAIT_MS}
   * has its connections destroyed instead: what was still running rejects.
   */
  close(): Promise<void> {
    return this.#closedOnce ??= this.#close();
  }

  async #close(): Promise<void> {
    this.#closed = true;
    this.#closing.abort();
    this.#missed?.close();
    // Subscriptions end quietly from here on, even one whose read a last NOTIFY has just started.
    this.#notifier.close();
    const answered = await settledWithin(Promise.allSettled([...this.#tails.values()]), CLOSE_WAIT_MS);
    if (answered && await settledWithin(Promise.allSettled(this.#running), CLOSE_WAIT_MS)) {
      await settledWithin(this.#unlisten?.() ?? Promise.resolve(), CLOSE_WAIT_MS);
    }
    // Nothing of the journal's runs any more (or the database stopped answering): a query postgres.js 3.4.9 still
    // keeps on a connection is one of a connection the database ended, which an end with a timeout waits for in vain.
    this.#sockets.close();
    await this.#sql.end({ timeout: 0 }).catch(() => {});
  }

  /**
   * Runs a statement that is the same whether it ran once or twice (a read, a
   * renewal, a delete) and returns its rows: one whose connection was lost
   * while it ran is sent once more. Otherwise as {@linkcode #once}.
   */
  #query(strings: TemplateStringsArray, ...values: postgres.ParameterOrFragment<never>[]): Promise<postgres.Row[]> {
    return this.#run(true, strings, values);
  }

  /**
   * Runs a statement that must not run twice (a commit, a creation, a delete) and returns
   * its rows. Sent again only when the database refused it before the driver
   * sent any of it: postgres.js 3.4.9 fails the first query on a connection it
   * opens again with the error that ended the connection's last query, if the
   * database ended that one mid-statement, without sending it (and a database
   * starting up refuses connections for a moment). Never when it may have been
   * sent (it would run twice: a commit is sent again by `#resent`, which its
   * function makes safe), nor when its connection could not be made (the
   * database is not there: failing at once tells the caller sooner).
   */
  #once(strings: TemplateStringsArray, ...values: postgres.ParameterOrFragment<never>[]): Promise<postgres.Row[]> {
    return this.#run(false, strings, values);
  }

  /**
   * {@linkcode #query} and {@linkcode #once}. postgres.js 3.4.9 also keeps
   * counting rows across a query that ended mid-result and puts the next
   * query's rows on that connection after as many holes (porsager/postgres#1119,
   * #1181): the holes are dropped.
   */
  async #run(
    idempotent: boolean,
    strings: TemplateStringsArray,
    values: postgres.ParameterOrFragment<never>[],
  ): Promise<postgres.Row[]> {
    let refused = false;
    let lost = false;
    for (;;) {
      const query = this.#sql(strings, ...values);
      try {
        const rows = await query;
        return rows.length === rows.count ? rows : rows.filter(() => true);
      } catch (error) {
        if (this.#closed) throw error;
        if (!refused && unsent(query) && error instanceof postgres.PostgresError) refused = true;
        else if (idempotent && !lost && !unsent(query) && connectionLost(error)) lost = true;
        else throw error;
      }
    }
  }

  /**
   * Runs a query so that `close` waits for it, with store failures as typed
   * errors; `whileClosing`, also once `close` has begun.
   */
  async #guard<T>(run: () => Promise<T>, whileClosing = false): Promise<T> {
    if (this.#closed && !whileClosing) throw new BrainError("journal_closed", "the journal is closed");
    const running = run();
    this.#running.add(running);
    try {
      return await running;
    } catch (error) {
      throw storageError(error);
    } finally {
      this.#running.delete(running);
    }
  }
}

/**
 * Seconds before the pool connects again after `retries` failed connections in a
 * row: doubling from 50 ms up to {@linkcode RECONNECT_MAX_MS}, with jitter.
 * postgres.js's own grows to 20 s, shared by the whole pool: a database back
 * from a restart of a few seconds was then not used for up to 20 s, and every
 * query meanwhile waited that long to fail (as did every commit after an
 * operator terminated a few of the pool's connections in a row).
 */
function reconnectDelay(retries: number): number {
  return Math.min(50 * 2 ** retries, RECONNECT_MAX_MS) * (0.5 + Math.random() / 2) / 1_000;
}

/**
 * True when the driver never handed `query` to a connection: postgres.js 3.4.9 sets a query's `state` (the
 * backend it runs on) as it first writes the query, and fails queries waiting for a connection without one.
 */
function unsent(query: postgres.PendingQuery<postgres.Row[]>): boolean {
  return (query as unknown as { state?: unknown }).state === null;
}

/**
 * True when `error` says the query's connection was lost while it ran: the
 * socket closed or was reset, or the database ended the session (SQLSTATE class
 * 57, such as `pg_terminate_backend` or a shutdown).
 */
function connectionLost(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof postgres.PostgresError) return typeof code === "string" && code.startsWith("57P");
  return code === "CONNECTION_CLOSED" || code === "ECONNRESET" || code === "EPIPE";
}

/** True when `error` says no connection to the database could be made: it is down, or not yet up again. */
function unreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ECONNREFUSED" || code === "CONNECT_TIMEOUT";
}

/** The database's clock in ms since the epoch, the one time every lease of a cluster is measured by. */
function now(sql: Sql) {
  return sql`(extract(epoch from clock_timestamp()) * 1000)::bigint`;
}

/** Why a fenced write touched no row: no session (no holder), a lease taken over, or another owner's live lease. */
function refusal(
  sessionId: string,
  holder: Pick<StoredLease, "owner" | "expiresAt"> | undefined,
  lease: Lease | undefined,
): BrainError {
  if (!holder) return new BrainError("session_not_found", `no session ${sessionId}`);
  return lease ? fencedError(lease) : ownedError(sessionId, holder);
}

/**
 * What the commit function needs to open and end calls: the offsets of the
 * records that open one, and the calls records end with each ending record's
 * offset (`enders`). A call ended twice, or that is no sequence at all, is refused
 * `call_finished` here; the function refuses the rest (a call not open).
 */
function callChanges(
  sessionId: string,
  bodies: RecordBody[],
): { opening: number[]; ended: number[]; enders: number[] } {
  const opening: number[] = [];
  const ended: number[] = [];
  const enders: number[] = [];
  bodies.forEach((body, index) => {
    const call = closes(body);
    if (call !== undefined) {
      if (!Number.isSafeInteger(call) || ended.includes(call)) {
        throw new BrainError("call_finished", `session ${sessionId}: call ${call} is not open`);
      }
      ended.push(call);
      enders.push(index);
    }
    if (opens(body)) opening.push(index);
  });
  return { opening, ended, enders };
}

/** A PostgreSQL array literal of safe integers. */
function integers(values: number[]): string {
  return `{${values.join(",")}}`;
}

/** True for a postgres.js client; false, never a throw, for anything else (a revoked Proxy of a function included). */
function isSql(sql: unknown): sql is Sql {
  try {
    return typeof sql === "function" && typeof (sql as Partial<Sql>).end === "function";
  } catch {
    return false;
  }
}

function decode(text: string, sessionId: string, sequence: number, at: number): JournalRecord {
  return storedRecord(parseStored(text, sessionId, sequence), sessionId, sequence, at);
}

function leaseOf(sessionId: string, owner: string, token: number, expiresAt: number): Lease {
  return Object.freeze({ sessionId, owner, token, expiresAt, fence: String(token) });
}
