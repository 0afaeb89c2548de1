import { type AppendNow, appendNowOf, type Journal } from "../journal/journal.ts";
import type { JournalRecord, RecordBody } from "../journal/records.ts";
import { BrainError } from "../outcome/errors.ts";
import { inMicrotask } from "../util/microtask.ts";

/** Intents one commit carries at most; more go in the next. */
const MAX_INTENTS_PER_COMMIT = 64;

/** Refusals a journal gives before it writes anything, which may be one intent's own (its size, say). */
const REFUSED_BEFORE_WRITING = new Set<string>(["payload_too_large", "invalid_argument", "limit_exceeded"]);

/** Where a committed intent landed: the sequence that names its call, and when. */
export interface CommittedIntent {
  readonly sequence: number;
  readonly at: number;
}

/** A synchronous append's answer for one intent. */
export function committedIntent(sequence: number, at: number): CommittedIntent {
  return { sequence, at };
}

interface Queued {
  intent: RecordBody;
  done: PromiseWithResolvers<CommittedIntent>;
}

/**
 * Commits the intents of the calls one session starts in the same tick (64
 * concurrent calls, or one batch of `start` frames from a host) in one journal
 * append, so a durable store writes them in one transaction instead of one
 * each. Each call still waits for its own intent to commit before it is
 * dispatched. A journal that commits at once in this process's memory has no
 * transaction to share: there each intent commits at once. A commit of several
 * that the journal refuses before writing anything is tried again one intent at
 * a time, so one intent too large fails no other; any other failure (the store,
 * the lease) is every one's answer, and none is tried again, for a commit whose
 * outcome is unknown may have happened.
 */
export class IntentCommits {
  #journal: Journal;
  #sessionId: string;
  #now: AppendNow | undefined;
  #queue: Queued[] = [];

  constructor(journal: Journal, sessionId: string) {
    this.#journal = journal;
    this.#sessionId = sessionId;
    this.#now = appendNowOf(journal);
  }

  /** Commits `intent` with the others of this tick; resolves with where it landed (its record, from a store). */
  commit(intent: RecordBody): Promise<CommittedIntent> {
    if (this.#now) {
      try {
        return Promise.resolve(this.#now(this.#sessionId, [intent], committedIntent));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const done = Promise.withResolvers<CommittedIntent>();
    if (this.#queue.push({ intent, done }) === 1) inMicrotask(this.#flush);
    return done.promise;
  }

  #flush = (): void => {
    const queue = this.#queue;
    this.#queue = [];
    for (let at = 0; at < queue.length; at += MAX_INTENTS_PER_COMMIT) {
      const batch = queue.slice(at, at + MAX_INTENTS_PER_COMMIT);
      if (batch.length === 1) this.#one(batch[0]);
      else {
        this.#append(batch.map(({ intent }) => intent)).then(
          (records) => batch.forEach(({ done }, index) => done.resolve(records[index])),
          (error) => {
            if (error instanceof BrainError && REFUSED_BEFORE_WRITING.has(error.code)) batch.forEach(this.#one);
            else batch.forEach(({ done }) => done.reject(error));
          },
        );
      }
    }
  };

  #one = ({ intent, done }: Queued): void => {
    this.#append([intent]).then((records) => done.resolve(records[0]), done.reject);
  };

  #append(intents: RecordBody[]): Promise<JournalRecord[]> {
    try {
      return this.#journal.append(this.#sessionId, intents);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
