import { BrainError } from "../outcome/errors.ts";
import { deepFreeze } from "../util/freeze.ts";
import { promised } from "../util/promised.ts";
import { follow } from "./follow.ts";
import { frozenRecord } from "./frozen_record.ts";
import { closes, opens } from "./open_calls.ts";
import type { Journal, ReadOptions, SubscribeOptions } from "./journal.ts";
import { CommitNotifier } from "./notifier.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "./records.ts";

interface StoredSession {
  meta: SessionMeta;
  records: JournalRecord[];
}

/**
 * The embedded default journal: ordered records in this process's memory.
 * Commits are synchronous, so sequences are dense without locking.
 *
 * @example
 * ```ts
 * import { MemoryJournal } from "@aexhq/brain";
 * const journal = new MemoryJournal();
 * await journal.createSession({ id: "s1", createdAt: Date.now(), tools: [] });
 * const [record] = await journal.append("s1", [{ kind: "tool_returned", call: 1 }]);
 * console.log(record.sequence); // 1
 * ```
 */
export class MemoryJournal implements Journal {
  #sessions = new Map<string, StoredSession>();
  #notifier = new CommitNotifier();
  #closed = false;

  /** Commits `bodies` atomically and returns them with their sequences. */
  append(sessionId: string, bodies: RecordBody[]): Promise<JournalRecord[]> {
    return promised(() => this.#commit(sessionId, bodies));
  }

  #commit(sessionId: string, bodies: RecordBody[]): JournalRecord[] {
    const session = this.#session(sessionId);
    const at = Date.now();
    const start = session.records.length + 1;
    const copies = bodies.length > 1 ? new Map() : undefined;
    const committed = bodies.map((body, index) => frozenRecord(body, sessionId, start + index, at, copies));
    for (const record of committed) session.records.push(record);
    this.#notifier.notify(sessionId);
    return committed;
  }

  /** Returns committed records in sequence order. */
  read(sessionId: string, { from = 1, limit }: ReadOptions = {}): Promise<JournalRecord[]> {
    return promised(() => {
      const records = this.#session(sessionId).records;
      const start = Math.max(from, 1) - 1;
      return records.slice(start, limit === undefined ? undefined : start + limit);
    });
  }

  /** The last committed sequence, or 0. */
  head(sessionId: string): Promise<number> {
    return promised(() => this.#session(sessionId).records.length);
  }

  /** The `tool_call_started` records of calls without a `tool_call_finished`. */
  openCalls(sessionId: string): Promise<JournalRecord[]> {
    return promised(() => {
      const records = this.#session(sessionId).records;
      const finished = new Set(records.flatMap((record) => closes(record) ?? []));
      return records.filter((record) => opens(record) && !finished.has(record.sequence));
    });
  }

  /** Yields committed records from `from` on, then each new commit. */
  subscribe(sessionId: string, options?: SubscribeOptions): AsyncIterable<JournalRecord> {
    return follow(
      (id, read) => this.read(id, read),
      () => ({ next: () => this.#notifier.next(sessionId), closed: () => this.#notifier.closed, close: () => {} }),
      sessionId,
      options,
    );
  }

  /** Stores a new session. */
  createSession(meta: SessionMeta): Promise<void> {
    return promised(() => {
      this.#open();
      if (this.#sessions.has(meta.id)) {
        throw new BrainError("session_exists", `session ${meta.id} already exists`);
      }
      this.#sessions.set(meta.id, { meta: deepFreeze(structuredClone(meta)), records: [] });
    });
  }

  /** Replaces a session's metadata. */
  updateSession(meta: SessionMeta): Promise<void> {
    return promised(() => {
      this.#session(meta.id).meta = deepFreeze(structuredClone(meta));
    });
  }

  /** The session's metadata, or `undefined`. */
  getSession(id: string): Promise<SessionMeta | undefined> {
    return promised(() => {
      this.#open();
      return this.#sessions.get(id)?.meta;
    });
  }

  /** Every stored session's metadata. */
  listSessions(): Promise<SessionMeta[]> {
    return promised(() => {
      this.#open();
      return [...this.#sessions.values()].map((session) => session.meta);
    });
  }

  /** Removes a session and its records. */
  deleteSession(id: string): Promise<void> {
    return promised(() => {
      this.#open();
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
    if (!session) throw new BrainError("session_not_found", `no session ${id}`);
    return session;
  }
}
