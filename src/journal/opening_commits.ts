import { BrainError } from "../outcome/errors.ts";
import type { Journal } from "./journal.ts";
import { closes, opens, unknownEnd } from "./open_calls.ts";
import type { JournalRecord, RecordBody } from "./records.ts";
import { paused } from "../util/paused.ts";
import { sameBody } from "./same_body.ts";

/** Pauses before each read of the journal that decides a doubtful commit, while its store keeps failing. */
const DECIDE_MS = [0, 50, 250, 1_000];
/** Pauses between later reads for the commits still undecided when their callers were told they failed. */
const LATER_MS = 1_000;
/** Later reads at most, a minute of them; a handle's end or the next owner ends what is still open after. */
const LATER_READS = 60;

/** Why a call whose start was reported failed, and which landed all the same, ends `unknown`. */
export const UNDECIDED_MESSAGE = "the commit of the call's start was reported failed, yet it landed; " +
  "the call was never dispatched";

/** A commit opening calls whose store failed with its outcome unknown. */
interface Doubtful {
  bodies: RecordBody[];
  error: BrainError;
  /** Resolved with the records if it landed, else rejected with `error`; undefined once its caller was told. */
  done?: PromiseWithResolvers<JournalRecord[]>;
}

/**
 * The commits that open calls (`tool_call_started`, `model_call_started`) in
 * one session its owner writes, and what to do when the store fails one with
 * its outcome unknown (`storage_unavailable`: a connection cut after the write,
 * say). The owner is the session's only writer, so the journal can tell: once
 * every opening commit sent before has settled (new ones wait meanwhile), a
 * call the journal has open that none of the owner's commits opened is one of
 * the doubtful commits that landed. A doubtful commit that landed resolves with
 * its records, as if its answer had arrived; one that did not rejects with the
 * store's error, knowing nothing was written. When the store stays down longer
 * than the reads that decide it, the caller is told the error, and a later read
 * ends the calls of such a commit that landed `unknown`: they were never
 * dispatched, and no call stays open while the session's handles live.
 */
export class OpeningCommits {
  #journal: Journal;
  #sessionId: string;
  #end: (bodies: RecordBody[]) => Promise<unknown>;
  /** Calls this owner's commits opened and have not ended. */
  #opened = new Set<number>();
  /** Opening commits sent and not settled. */
  #sending = new Set<Promise<unknown>>();
  #doubtful: Doubtful[] = [];
  /** Settles once the doubtful commits are decided; opening commits wait for it. */
  #deciding: Promise<void> | undefined;
  #later = 0;
  #stopped = new AbortController();
  /** Aborted once the owner stops or this stops: no more pauses, the next read is the last. */
  #hurried = new AbortController();

  /** For session `sessionId`, read in `journal`; `end` commits the ends of calls it finds stranded, under the lease. */
  constructor(journal: Journal, sessionId: string, end: (bodies: RecordBody[]) => Promise<unknown>) {
    this.#journal = journal;
    this.#sessionId = sessionId;
    this.#end = end;
  }

  /** Commits `bodies` through `send`, deciding its outcome when the store leaves it unknown. */
  append(bodies: RecordBody[], send: () => Promise<JournalRecord[]>): Promise<JournalRecord[]> {
    if (!bodies.some(opens)) {
      const sent = send();
      return bodies.some(ends) ? sent.then(this.#ended) : sent;
    }
    return this.#deciding ? this.#deciding.then(() => this.#open(bodies, send)) : this.#open(bodies, send);
  }

  /** Stops deciding: the owner released the session or lost it. */
  stop(): void {
    this.#stopped.abort();
    this.#hurried.abort();
  }

  /**
   * The owner is stopping (its Brain closes): the commits being decided are
   * decided by one read made at once, as any read decides them, and no later
   * read follows for those it leaves undecided.
   */
  hurry(): void {
    this.#hurried.abort();
  }

  #open(bodies: RecordBody[], send: () => Promise<JournalRecord[]>): Promise<JournalRecord[]> {
    let sent: Promise<JournalRecord[]>;
    try {
      sent = send();
    } catch (error) {
      return Promise.reject(error);
    }
    this.#sending.add(sent);
    return sent.then((records) => {
      this.#sending.delete(sent);
      this.#ended(records);
      return records;
    }, (error) => {
      this.#sending.delete(sent);
      if (!(error instanceof BrainError && error.code === "storage_unavailable") || this.#stopped.signal.aborted) {
        throw error;
      }
      const done = Promise.withResolvers<JournalRecord[]>();
      this.#doubtful.push({ bodies, error, done });
      this.#deciding ??= this.#decide(DECIDE_MS).finally(() => this.#deciding = undefined);
      return done.promise;
    });
  }

  /** Keeps count of the calls `records` open and end. */
  #ended = (records: JournalRecord[]): JournalRecord[] => {
    for (const record of records) {
      if (opens(record)) this.#opened.add(record.sequence);
      else {
        const call = closes(record);
        if (call !== undefined) this.#opened.delete(call);
      }
    }
    return records;
  };

  /** Reads the session after each pause of `pauses` until it decides the doubtful commits. */
  async #decide(pauses: readonly number[]): Promise<void> {
    for (const pause of pauses) {
      if (pause > 0 && !await paused(pause, this.#hurried.signal) && this.#stopped.signal.aborted) break;
      while (this.#sending.size > 0) await Promise.allSettled(this.#sending);
      const last = this.#hurried.signal.aborted;
      try {
        await this.#decideNow();
        return;
      } catch (error) {
        if (error instanceof BrainError && error.code === "storage_unavailable" && !last) continue;
        // A closed journal answers nothing more: no later read either.
        if (error instanceof BrainError && error.code === "journal_closed") this.stop();
        break;
      }
    }
    // Undecided: the callers are told the store failed; later reads end what landed of it.
    for (const doubtful of this.#doubtful) {
      doubtful.done?.reject(doubtful.error);
      doubtful.done = undefined;
    }
    if (this.#doubtful.length > 0 && !this.#hurried.signal.aborted && this.#later++ < LATER_READS) {
      void paused(LATER_MS, this.#hurried.signal).then((resumed) => {
        if (resumed) this.#deciding ??= this.#decide([0]).finally(() => this.#deciding = undefined);
      });
    }
  }

  /** Decides every doubtful commit from the calls the journal has open; throws what the store fails with. */
  async #decideNow(): Promise<void> {
    const open = await this.#journal.openCalls(this.#sessionId);
    const stray = new Map<number, JournalRecord>();
    for (const record of open) if (!this.#opened.has(record.sequence)) stray.set(record.sequence, record);
    // Calls ended by a path that did not pass here (a retried end found already recorded) are forgotten too.
    const stillOpen = new Set(open.map((record) => record.sequence));
    for (const call of this.#opened) if (!stillOpen.has(call)) this.#opened.delete(call);
    const decided: { doubtful: Doubtful; landed: JournalRecord[] | undefined }[] = [];
    for (const doubtful of this.#doubtful) {
      const landed = await this.#landing(doubtful.bodies, stray);
      for (const record of landed ?? []) stray.delete(record.sequence);
      decided.push({ doubtful, landed });
    }
    const strayEnds = decided.flatMap(({ doubtful, landed }) =>
      doubtful.done || !landed ? [] : landed.filter(opens).map((started) => unknownEnd(started, UNDECIDED_MESSAGE))
    );
    if (strayEnds.length > 0) await this.#end(strayEnds);
    this.#doubtful = [];
    this.#later = 0;
    for (const { doubtful: { done, error }, landed } of decided) {
      if (landed) this.#ended(landed);
      if (landed) done?.resolve(landed);
      else done?.reject(error);
    }
  }

  /**
   * The records of a commit of `bodies` among `stray` open calls, read back
   * whole, if it landed: its first opening record, and every record after it
   * of the commit, are in the journal as `bodies` says.
   */
  async #landing(bodies: RecordBody[], stray: Map<number, JournalRecord>): Promise<JournalRecord[] | undefined> {
    const offsets = bodies.flatMap((body, offset) => opens(body) ? [offset] : []);
    for (const candidate of stray.values()) {
      const first = candidate.sequence - offsets[0];
      if (first < 1 || !sameBody(candidate, bodies[offsets[0]])) continue;
      if (!offsets.every((offset) => sameBody(stray.get(first + offset), bodies[offset]))) continue;
      const records = bodies.length === offsets.length
        ? offsets.map((offset) => stray.get(first + offset)!)
        : await this.#journal.read(this.#sessionId, { from: first, limit: bodies.length });
      if (records.length === bodies.length && records.every((record, index) => sameBody(record, bodies[index]))) {
        return records;
      }
    }
    return undefined;
  }
}

/** True for a record that ends a call. */
function ends(body: RecordBody): boolean {
  return closes(body) !== undefined;
}
