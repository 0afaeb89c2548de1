import { BrainError } from "../outcome/errors.ts";
import { isInstance } from "../outcome/known_keys.ts";
import { errorText } from "../util/error_text.ts";
import { callAt } from "../util/timer.ts";
import { isBuiltIn } from "./built_in.ts";
import { checkedSubscription } from "./checked_subscription.ts";
import type { SessionCreateOptions } from "./host_sessions.ts";
import type { Journal, ReadOptions, SubscribeOptions } from "./journal.ts";
import {
  answeredHead,
  answeredHolder,
  answeredIds,
  answeredLease,
  answeredMeta,
  answeredMetas,
  answeredNodes,
  appendedRecords,
  openCallRecords,
  readRecords,
} from "./journal_answers.ts";
import type { AcquireOptions, AppendOptions, Lease, StoredLease } from "./lease.ts";
import type { NodeBeat } from "./nodes.ts";
import { checkRange } from "./read_options.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "./records.ts";
import { storageError } from "./storage_error.ts";

/**
 * `journal` as a Brain uses it: one of Brain's own stores as it is (their
 * answers are checked where they are read, at no cost per call), any other
 * through a {@linkcode CheckedJournal} that waits `answerMs` at most for each
 * answer.
 */
export function checkedJournal(journal: Journal, answerMs: number): Journal {
  return isBuiltIn(journal) ? journal : new CheckedJournal(journal, answerMs);
}

/**
 * An application's journal, whose answers Brain cannot take on trust: every
 * answer is read once into a frozen copy and checked to be one a store can give
 * (records of known kinds, numbered densely from where they were asked for, the
 * commit's records numbered past every earlier commit under the same lease,
 * leases of the session and owner asked for), else it fails `journal_corrupt`;
 * anything it throws or rejects with, other than a `BrainError`, fails
 * `storage_unavailable` (or `storage_full`). An answer that has not come within
 * `answerMs` fails `storage_unavailable`, as a commit over a lost connection
 * does: its outcome is unknown, and a commit that opens calls is decided by
 * reading the session back. A subscription waits for commits as long as it is
 * followed, but ends as soon as its signal aborts or the journal closes.
 * Closing fails the answers still awaited with `journal_closed`.
 */
export class CheckedJournal implements Journal {
  #inner: Journal;
  #answerMs: number;
  /** Each lease this journal answered: what the application's journal gave, and the last sequence committed under it. */
  #issued = new WeakMap<Lease, { original: unknown; floor: { head: number } }>();
  /** Fails an answer still awaited. */
  #waiting = new Set<(error: BrainError) => void>();
  #closing = new AbortController();
  #closed: Promise<void> | undefined;

  /** Checks the answers of `inner`, waiting `answerMs` at most for each. */
  constructor(inner: Journal, answerMs: number) {
    this.#inner = inner;
    this.#answerMs = answerMs;
  }

  append(sessionId: string, bodies: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]> {
    const issued = options?.lease && this.#issued.get(options.lease);
    const floor = issued ? issued.floor.head : 0;
    const sent = issued ? { ...options, lease: issued.original as Lease } : options;
    return this.#ask("append", () => this.#inner.append(sessionId, bodies, sent), (answer) => {
      const records = appendedRecords(answer, sessionId, bodies, floor);
      if (issued && records.length > 0) {
        issued.floor.head = Math.max(issued.floor.head, records[records.length - 1].sequence);
      }
      return records;
    });
  }

  acquire(sessionId: string, options: AcquireOptions): Promise<Lease> {
    return this.#ask(
      "acquire",
      () => this.#inner.acquire(sessionId, options),
      (answer) => this.#issue(answer, answeredLease(answer, "acquire", sessionId, options.owner), { head: 0 }),
    );
  }

  renew(lease: Lease, ttlMs: number): Promise<Lease> {
    const issued = this.#issued.get(lease);
    return this.#ask(
      "renew",
      () => this.#inner.renew((issued?.original ?? lease) as Lease, ttlMs),
      (answer) =>
        this.#issue(answer, answeredLease(answer, "renew", lease.sessionId, lease.owner), issued?.floor ?? { head: 0 }),
    );
  }

  release(lease: Lease): Promise<void> {
    const original = (this.#issued.get(lease)?.original ?? lease) as Lease;
    return this.#ask("release", () => this.#inner.release(original), nothing);
  }

  holder(sessionId: string): Promise<StoredLease | undefined> {
    return this.#ask("holder", () => this.#inner.holder(sessionId), (answer) => answeredHolder(answer, sessionId));
  }

  stranded(): Promise<string[]> {
    return this.#ask("stranded", () => this.#inner.stranded(), answeredIds);
  }

  beat(node: string, url: string, ttlMs: number): Promise<void> {
    return this.#ask("beat", () => this.#inner.beat(node, url, ttlMs), nothing);
  }

  nodes(): Promise<NodeBeat[]> {
    return this.#ask("nodes", () => this.#inner.nodes(), answeredNodes);
  }

  read(sessionId: string, options?: ReadOptions): Promise<JournalRecord[]> {
    let range: ReadOptions;
    try {
      range = checkRange("read options", options ?? {});
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#ask(
      "read",
      () => this.#inner.read(sessionId, range),
      (answer) => readRecords(answer, sessionId, range.from, range.limit),
    );
  }

  head(sessionId: string): Promise<number> {
    return this.#ask("head", () => this.#inner.head(sessionId), (answer) => answeredHead(answer, sessionId));
  }

  openCalls(sessionId: string): Promise<JournalRecord[]> {
    return this.#ask(
      "openCalls",
      () => this.#inner.openCalls(sessionId),
      (answer) => openCallRecords(answer, sessionId),
    );
  }

  subscribe(sessionId: string, options?: SubscribeOptions): AsyncIterable<JournalRecord> {
    return checkedSubscription(this.#inner, sessionId, options, this.#closing.signal, this.#answerMs);
  }

  createSession(meta: SessionMeta, options?: SessionCreateOptions): Promise<void> {
    return this.#ask("createSession", () => this.#inner.createSession(meta, options), nothing);
  }

  updateSession(meta: SessionMeta): Promise<void> {
    return this.#ask("updateSession", () => this.#inner.updateSession(meta), nothing);
  }

  getSession(id: string): Promise<SessionMeta | undefined> {
    return this.#ask("getSession", () => this.#inner.getSession(id), (answer) => answeredMeta(answer, id));
  }

  listSessions(): Promise<SessionMeta[]> {
    return this.#ask("listSessions", () => this.#inner.listSessions(), answeredMetas);
  }

  deleteSession(id: string): Promise<void> {
    return this.#ask("deleteSession", () => this.#inner.deleteSession(id), nothing);
  }

  /**
   * Ends every subscription, closes the application's journal (waiting
   * `answerMs` at most), then fails the answers still awaited `journal_closed`.
   */
  close(): Promise<void> {
    return this.#closed ??= (async () => {
      this.#closing.abort();
      try {
        await this.#bounded("close", () => this.#inner.close(), nothing);
      } finally {
        for (const fail of this.#waiting) fail(new BrainError("journal_closed", "the journal is closed"));
      }
    })();
  }

  /** The lease `checked` the application's journal answered as `answer`, remembered with the floor of its commits. */
  #issue(answer: unknown, checked: Lease, floor: { head: number }): Lease {
    this.#issued.set(checked, { original: answer, floor });
    return checked;
  }

  /** `method`'s answer, checked by `check`; refused `journal_closed` once the journal closes. */
  #ask<T>(method: string, invoke: () => unknown, check: (answer: unknown) => T): Promise<T> {
    if (this.#closed) return Promise.reject(new BrainError("journal_closed", "the journal is closed"));
    return this.#bounded(method, invoke, check);
  }

  /** What `invoke` answers, checked by `check`, within `answerMs`. */
  #bounded<T>(method: string, invoke: () => unknown, check: (answer: unknown) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let cancel = () => {};
      const settle = (done: () => void) => {
        if (!this.#waiting.delete(fail)) return;
        cancel();
        done();
      };
      const fail = (error: BrainError) => settle(() => reject(error));
      this.#waiting.add(fail);
      let answer: Promise<unknown>;
      try {
        answer = Promise.resolve(invoke());
      } catch (error) {
        return fail(storageError(error));
      }
      cancel = callAt(Date.now() + this.#answerMs, () => fail(silent(method, this.#answerMs)));
      answer.then(
        (value) =>
          settle(() => {
            try {
              resolve(check(value));
            } catch (error) {
              reject(corruptAnswer(error));
            }
          }),
        (error) => fail(storageError(error)),
      );
    });
  }
}

/** What a check of an answer threw, as a `BrainError`: anything else is `journal_corrupt`. */
function corruptAnswer(error: unknown): BrainError {
  if (isInstance(error, BrainError)) return error;
  return new BrainError("journal_corrupt", `the journal answered what no store answers: ${errorText(error)}`);
}

function nothing(): undefined {
  return undefined;
}

function silent(method: string, answerMs: number): BrainError {
  return new BrainError(
    "storage_unavailable",
    `the journal did not answer ${method} within ${answerMs} ms: its store is taken to have failed`,
  );
}
