import { BrainError } from "../outcome/errors.ts";
import { isObject } from "../util/is_object.ts";
import { settledWithin } from "../util/settled_within.ts";
import { shownValue } from "../util/shown_value.ts";
import type { Journal, SubscribeOptions } from "./journal.ts";
import { followedRecord } from "./journal_answers.ts";
import { checkRange } from "./read_options.ts";
import type { JournalRecord } from "./records.ts";
import { storageError } from "./storage_error.ts";

/**
 * An application journal's subscription to `sessionId`, checked: each record
 * must be the next of the session (`journal_corrupt` otherwise), and a failure
 * of the journal's iteration is a `BrainError`. It ends (done) as soon as the
 * caller's signal aborts, the caller stops iterating, or `closing` aborts,
 * whether or not the journal's own iteration does; the journal's is then
 * stopped, waiting no longer than `answerMs` for it.
 */
export function checkedSubscription(
  inner: Journal,
  sessionId: string,
  options: SubscribeOptions | undefined,
  closing: AbortSignal,
  answerMs: number,
): AsyncIterable<JournalRecord> {
  return { [Symbol.asyncIterator]: () => new Following(inner, sessionId, options, closing, answerMs) };
}

/** One iteration of a {@linkcode checkedSubscription}. */
class Following implements AsyncIterableIterator<JournalRecord> {
  #inner: Journal;
  #sessionId: string;
  #options: SubscribeOptions | undefined;
  #closing: AbortSignal;
  #answerMs: number;
  /** The journal's iteration, once started. */
  #records: AsyncIterator<unknown> | undefined;
  /** Aborts as the iteration ends, for whatever reason. */
  #ended = new AbortController();
  #stop: AbortSignal | undefined;
  /** The sequence the next record must have. */
  #expected = 1;

  constructor(
    inner: Journal,
    sessionId: string,
    options: SubscribeOptions | undefined,
    closing: AbortSignal,
    answerMs: number,
  ) {
    this.#inner = inner;
    this.#sessionId = sessionId;
    this.#options = options;
    this.#closing = closing;
    this.#answerMs = answerMs;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<JournalRecord>> {
    if (this.#ended.signal.aborted) return DONE;
    try {
      const records = this.#records ??= this.#open();
      if (this.#stop!.aborted) return await this.return();
      const step = await whenSettledOrAborted(nextOf(records), this.#stop!);
      if (step === ABORTED) return await this.return();
      if (!isObject(step)) throw corruptStep(this.#sessionId, `${shownValue(step)}, not an iterator result`);
      if (step.done === true) {
        this.#ended.abort();
        return DONE;
      }
      const record = followedRecord(step.value, this.#sessionId, this.#expected);
      this.#expected++;
      return { done: false, value: record };
    } catch (error) {
      await this.return();
      throw storageError(error);
    }
  }

  /** Ends the iteration, stopping the journal's. */
  async return(): Promise<IteratorResult<JournalRecord>> {
    if (this.#ended.signal.aborted) return DONE;
    this.#ended.abort();
    const records = this.#records;
    if (records !== undefined) {
      try {
        await settledWithin(Promise.resolve(records.return?.()), this.#answerMs);
      } catch {
        // A journal whose iteration cannot be stopped has been left all the same.
      }
    }
    return DONE;
  }

  /** Starts the journal's iteration over the checked options: the caller's range, and a signal for every way it ends. */
  #open(): AsyncIterator<unknown> {
    const { from = 1, signal } = checkRange("subscribe options", this.#options ?? {});
    this.#expected = from;
    this.#stop = AbortSignal.any([this.#ended.signal, this.#closing, ...signal ? [signal] : []]);
    let records: unknown;
    try {
      records = this.#inner.subscribe(this.#sessionId, { from, signal: this.#stop })[Symbol.asyncIterator]();
    } catch (error) {
      throw storageError(error);
    }
    if (!isObject(records) || typeof records.next !== "function") {
      throw corruptStep(this.#sessionId, `${shownValue(records)} as its iterator`);
    }
    return records as unknown as AsyncIterator<unknown>;
  }
}

const DONE: IteratorResult<JournalRecord> = Object.freeze({ done: true, value: undefined });
const ABORTED = Symbol("aborted");

/** The journal's next step: a throw, or a rejection, is a failure of its store. */
function nextOf(records: AsyncIterator<unknown>): Promise<unknown> {
  try {
    return Promise.resolve(records.next());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** `work`'s value, or {@linkcode ABORTED} as soon as `signal` aborts. */
function whenSettledOrAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function corruptStep(sessionId: string, what: string): BrainError {
  return new BrainError("journal_corrupt", `the journal's subscription to session ${sessionId} answered ${what}`, {
    details: { sessionId },
  });
}
