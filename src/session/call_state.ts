import { type AppendNow, appendNowOf, firstSequence, type Journal } from "../journal/journal.ts";
import { landedCommit } from "../journal/landed_commit.ts";
import { heldRecordBody } from "../journal/frozen_record.ts";
import { ownerStopping } from "../journal/ownership.ts";
import { paused } from "../util/paused.ts";
import type { JournalRecord, RecordBody, TerminalCause } from "../journal/records.ts";
import { BrainError } from "../outcome/errors.ts";
import { findNonJson, jsonSize, type JsonValue } from "../outcome/json.ts";
import { fail, ok, type Outcome } from "../outcome/outcome.ts";
import { Finished } from "../contract/context.ts";
import { type CallSink, endedReason, type PublishedResult } from "../contract/call.ts";
import { RacedAbortController } from "../util/signal.ts";
import { callAt } from "../util/timer.ts";
import { BRAIN_MAX_LATE_RECORDS } from "../contract/budgets.ts";
import { utf8Length } from "../util/utf8.ts";
import { errorText } from "../util/error_text.ts";
import { refusedEventKind } from "../run/report_arguments.ts";
import type { Activation } from "./activation.ts";
import type { ModelRequest, ModelResult, NormalizedModelRequest } from "../model/types.ts";
import { normalizeModelRequest } from "../model/request.ts";
import type { ModelCaller } from "./model_call.ts";
import type { ToolCallTrace } from "../telemetry/tool_call_trace.ts";
import { inMicrotask } from "../util/microtask.ts";

/** How a Tool call ended: its terminal record's sequence, first cause and outcome. */
export interface CallEnd {
  /** Sequence of the `tool_call_started` record that names the call. */
  call: number;
  /** Sequence of the `tool_call_finished` record. */
  sequence: number;
  /** The first terminal cause. */
  cause: TerminalCause;
  /** The final outcome: the finishing result, the last result, or why the caller stopped waiting. */
  outcome: Outcome;
}

/**
 * Brain's side of one Tool call. Every report commits to the journal, in the
 * order it was admitted, before its promise resolves. The first terminal cause
 * is claimed synchronously and wins; later causes are recorded as late.
 */
export class CallState implements CallSink {
  /** Sequence of the call's `tool_call_started` record. */
  readonly call: number;
  /** Resolves once the terminal record is committed. */
  readonly ended: Promise<CallEnd>;
  /** Its index among its session's open calls, -1 once it ended. */
  slot = -1;
  #journal: Journal;
  /** The journal's synchronous append, when it has one. */
  #appendNow: AppendNow | undefined;
  #sessionId: string;
  #activation: Activation;
  #deadline: number | undefined;
  #controller = new RacedAbortController();
  #signal = this.#controller.signal;
  /** The call's commits still in flight, and the last of them. */
  #inFlight = 0;
  #last: Promise<unknown> | undefined;
  #claimed: TerminalCause | undefined;
  #lastResult: Outcome | undefined;
  #end: PromiseWithResolvers<CallEnd>;
  #disarm: (() => void) | undefined;
  #models: ModelCaller | undefined;
  #tool: string;
  #lates = 0;
  #trace: ToolCallTrace | undefined;
  #onEnded: (state: CallState, error?: unknown) => void;
  /** Sequence of the call's last record a commit through the journal's promise was answered for. */
  #answered: number;

  /**
   * Brain creates one per `tool_call_started` record it commits: `call` is its
   * sequence in session `sessionId`, `intent` its body. `end` settles with the
   * call's end (it is `ended`), and `onEnded` is told once it settles, with the
   * error when it rejects. `models` is the session's model, if it has one,
   * `trace` the call's span when tracing.
   */
  constructor(
    journal: Journal,
    sessionId: string,
    call: number,
    intent: { readonly tool: string; readonly deadline?: number },
    activation: Activation,
    end: PromiseWithResolvers<CallEnd>,
    onEnded: (state: CallState, error?: unknown) => void,
    models: ModelCaller | undefined,
    trace: ToolCallTrace | undefined,
  ) {
    this.#tool = intent.tool;
    this.#trace = trace;
    this.#onEnded = onEnded;
    this.#models = models;
    this.#journal = journal;
    this.#appendNow = appendNowOf(journal);
    this.#sessionId = sessionId;
    this.#activation = activation;
    this.#deadline = intent.deadline;
    this.call = call;
    this.#answered = call;
    this.#end = end;
    this.ended = end.promise;
  }

  /** The call's absolute deadline, if it has one. */
  get deadline(): number | undefined {
    return this.#deadline;
  }

  /** Aborted when the call ends for any reason. */
  get signal(): AbortSignal {
    return this.#signal;
  }

  /** True once a terminal cause has been claimed. */
  get ending(): boolean {
    return this.#claimed !== undefined;
  }

  /** Arms the deadline; an already expired deadline ends the call at once. */
  arm(): void {
    if (this.#deadline !== undefined) this.#disarm = callAt(this.#deadline, () => this.#stopQuietly("timeout"));
  }

  /** Commits an extension Event. */
  emit(event: string, data: JsonValue): Promise<number> {
    let body;
    try {
      body = this.#eventBody(event, data);
    } catch (error) {
      return Promise.reject(error);
    }
    const committed = this.#commit([body], firstSequence);
    return this.#trace ? this.#trace.emit(event, committed) : committed;
  }

  /**
   * Commits an extension Event before returning its sequence, when the journal
   * commits at once and none of the call's commits is in flight; else undefined
   * (then `emit` commits it). Throws what `emit` would reject with.
   */
  emitNow(event: string, data: JsonValue): number | undefined {
    if (this.#trace || this.#inFlight !== 0 || !this.#appendNow) return undefined;
    return this.#appendNow(this.#sessionId, [this.#eventBody(event, data)], firstSequence);
  }

  /** The `tool_event` record of an Event the call may still commit; throws why not. */
  #eventBody(event: string, data: JsonValue): RecordBody {
    const refusedKind = refusedEventKind(event);
    if (refusedKind) throw refusedKind;
    const size = jsonSize(data);
    if (size < 0) throw new BrainError("invalid_argument", `event data is not JSON: ${findNonJson(data)}`);
    const refused = this.#admit(utf8Length(event) + size);
    if (refused) throw refused;
    return { kind: "tool_event", call: this.call, event, data };
  }

  /** Commits a result; a non-success outcome also ends the call. */
  emitResult(result: PublishedResult): Promise<number> {
    const size = resultSize(result);
    if (typeof size === "string") return Promise.reject(new BrainError("invalid_argument", size));
    const refused = this.#admit(size);
    if (refused) return Promise.reject(refused);
    if (result.outcome.status !== "ok") {
      this.#claim("finish");
      return Promise.resolve(this.#terminal(resultBody(this.call, result), "finish", result.outcome, resultSequence));
    }
    this.#lastResult = result.outcome;
    return this.#commit([resultBody(this.call, result)], firstSequence);
  }

  /** Ends the synchronous phase, publishing `result` first when given. */
  async returned(result?: PublishedResult): Promise<void> {
    if (this.#claimed) {
      if (result) await this.#late("return");
      return;
    }
    if (result && !isOk(result)) {
      await this.finish(result);
      return;
    }
    if (result) {
      // What the journal cannot keep, it refuses at the commit below.
      const size = resultSize(result);
      const refused = this.#admit(typeof size === "number" ? size : 0);
      if (refused) {
        await this.finish({ outcome: budgetFailure(refused) }, "error");
        return;
      }
      this.#lastResult = result.outcome;
    }
    const bodies: RecordBody[] = result ? [resultBody(this.call, result)] : [];
    bodies.push({ kind: "tool_returned", call: this.call });
    await this.#commit(bodies, ignore);
  }

  /** Ends the call; after another terminal cause it is recorded as late. */
  finish(
    result: PublishedResult | undefined,
    cause: "finish" | "error" | "unknown" = "finish",
  ): Promise<Finished> {
    if (this.#claimed) return this.#lateFinish(cause);
    return Promise.resolve(this.#finish(result, cause));
  }

  /**
   * {@linkcode finish}, returning the Tool's `Finished` itself when the journal
   * commits at once; a late finish, or one whose commit waits, still gives its promise.
   * `outcomeSize`, when given, is the size of the result's outcome as JSON, counted by the caller.
   */
  finishNow(
    result: PublishedResult | undefined,
    cause: "finish" | "error" | "unknown" = "finish",
    outcomeSize?: number,
  ): Finished | Promise<Finished> {
    return this.#claimed ? this.#lateFinish(cause) : this.#finish(result, cause, outcomeSize);
  }

  #finish(
    result: PublishedResult | undefined,
    cause: "finish" | "error" | "unknown",
    outcomeSize?: number,
  ): Finished | Promise<Finished> {
    this.#claim(cause);
    let body: RecordBody | undefined;
    let outcome: Outcome;
    // A result the journal cannot keep, or that cannot even be read, still ends the call, with an error saying
    // why: nothing stays open.
    try {
      outcome = result?.outcome ??
        (cause === "unknown" ? { status: "unknown", message: defaultMessage.unknown } : this.#lastResult ?? ok(null));
      if (result) {
        const size = outcomeSize === undefined ? resultSize(result) : outcomeSize + contentSize(result.content);
        const refused = typeof size === "string" ? undefined : this.#budget(size);
        if (typeof size === "string") {
          outcome = fail("invalid_output", size);
          cause = "error";
        } else if (refused) {
          outcome = budgetFailure(refused);
          cause = "error";
        } else body = resultBody(this.call, result);
      }
    } catch (error) {
      body = undefined;
      outcome = fail("invalid_output", unreadableResult(error));
      cause = "error";
    }
    return this.#terminal(body, cause, outcome, ownFinish);
  }

  /**
   * A finish after another terminal cause: recorded as late, resolving with the call's end; `brain_closed`
   * once the journal closed (its Brain closed), as a remote host whose Brain client closed is told.
   */
  #lateFinish(cause: string): Promise<Finished> {
    return this.#late(cause, refusedClosed).then(() => this.ended).then(lateFinish);
  }

  /**
   * Calls the session's model with this call's identity and activation; the call's end stops it. A malformed
   * request is `invalid_argument` whatever the call's state, as a remote host checks it before it is sent.
   */
  model(request: ModelRequest): Promise<ModelResult> {
    let normalized: NormalizedModelRequest;
    try {
      normalized = normalizeModelRequest(request);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#claimed) {
      return Promise.reject(new BrainError("call_finished", `call ${this.call} has ended (${this.#claimed})`));
    }
    if (!this.#models) {
      return Promise.reject(new BrainError("model_unavailable", `session ${this.#sessionId} has no model`));
    }
    return this.#models.call(normalized, {
      origin: { kind: "tool", tool: this.#tool, call: this.call },
      activation: this.#activation,
      signal: this.signal,
      traceparent: this.#trace?.traceparent,
    }).then(({ result }) => result);
  }

  /** Commits `bodies` after every earlier report of the call, such as the Environment changes it makes. */
  record(bodies: RecordBody[]): Promise<JournalRecord[]> {
    // Through the journal's promise, whose records it builds from one read of the bodies: such changes are few.
    return this.#commitLater(bodies, (records) => records);
  }

  /** Ends the call for a reason outside the Tool: deadline, cancellation or lost connection. */
  stop(cause: "timeout" | "cancelled" | "unknown", message: string = defaultMessage[cause]): Promise<CallEnd> {
    if (this.#claimed) {
      void this.#late(cause).catch(() => {});
      return this.ended;
    }
    this.#claim(cause);
    return Promise.resolve(this.#terminal(undefined, cause, { status: cause, message }, sameEnd));
  }

  /**
   * {@linkcode stop} for a stop no one waits on (a deadline, an aborted signal): a
   * terminal commit the store refuses for good rejects `ended` for its waiters, not here.
   */
  #stopQuietly(cause: "timeout" | "cancelled"): void {
    this.stop(cause).catch(ignore);
  }

  /** Stops the call `cancelled` when `signal` aborts (at once if it has), while the call is open. */
  cancelOn(signal: AbortSignal): void {
    if (signal.aborted) this.#stopQuietly("cancelled");
    else signal.addEventListener("abort", () => this.#stopQuietly("cancelled"), { once: true, signal: this.#signal });
  }

  /** Claims the terminal cause; the signal aborts once the terminal record is committed or queued (see #terminal). */
  #claim(cause: TerminalCause): void {
    this.#claimed = cause;
    this.#disarm?.();
  }

  #admit(bytes: number): BrainError | undefined {
    if (this.#claimed) return new BrainError("call_finished", `call ${this.call} has ended (${this.#claimed})`);
    return this.#budget(bytes);
  }

  #budget(bytes: number): BrainError | undefined {
    try {
      this.#activation.charge(bytes);
      return undefined;
    } catch (error) {
      return error as BrainError;
    }
  }

  /**
   * Commits the terminal record. A store that failed for a moment is tried
   * again; if the journal says the call already ended (another owner ended it),
   * `ended` reports that terminal record. Otherwise `ended` rejects with the
   * error and the call's next owner ends it: a waiting caller always settles.
   */
  #terminal<T>(
    result: RecordBody | undefined,
    cause: TerminalCause,
    outcome: Outcome,
    as: (end: CallEnd) => T,
  ): T | Promise<T> {
    const finished: RecordBody = { kind: "tool_call_finished", call: this.call, cause, outcome };
    const bodies = result ? [result, finished] : [finished];
    const ended = this.#terminalCommit(bodies, cause, outcome, as);
    // Only now: what the signal's listeners commit (a late finish) follows the terminal record.
    this.#controller.abort(endedReason(cause));
    return ended;
  }

  #terminalCommit<T>(
    bodies: RecordBody[],
    cause: TerminalCause,
    outcome: Outcome,
    as: (end: CallEnd) => T,
  ): T | Promise<T> {
    let last;
    try {
      last = this.#committedNow(bodies);
    } catch (error) {
      return this.#refusedEnd(bodies, cause, outcome, error, as);
    }
    if (last === undefined) return this.#terminalLater(bodies, cause, outcome, as);
    return as(this.#settleAt(last, cause, outcome));
  }

  /** {@linkcode #terminal} through the journal's promise. */
  #terminalLater<T>(bodies: RecordBody[], cause: TerminalCause, outcome: Outcome, as: (end: CallEnd) => T): Promise<T> {
    return this.#commitLater(
      bodies,
      (records) => as(this.#settleAt(lastSequence(records), cause, outcome)),
      (error) => this.#refusedEnd(bodies, cause, outcome, error, as),
    );
  }

  /** After a refused terminal commit: the call's end once it is retried, found recorded, or given up. */
  #refusedEnd<T>(
    bodies: RecordBody[],
    cause: TerminalCause,
    outcome: Outcome,
    error: unknown,
    as: (end: CallEnd) => T,
  ): Promise<T> {
    this.#retry(bodies, cause, outcome, error, 0);
    return this.ended.then(as);
  }

  /**
   * Handles a refused terminal commit: settles with the end already recorded,
   * tries again, or fails. Once the session's owner stops (its Brain closes),
   * the next try is made at once and is the last.
   */
  #retry(bodies: RecordBody[], cause: TerminalCause, outcome: Outcome, error: unknown, tries: number): void {
    const code = error instanceof BrainError ? error.code : undefined;
    const stopping = ownerStopping(this.#journal);
    if (code === "call_finished") {
      this.#recordedEnd(error as BrainError).then((end) => this.#settle(end), (error) => this.#fail(error));
    } else if (RETRIED.has(code) && tries < TERMINAL_RETRY_MS.length) {
      void paused(TERMINAL_RETRY_MS[tries], stopping).then(() => {
        const next = stopping?.aborted ? TERMINAL_RETRY_MS.length : tries + 1;
        this.#commit(
          bodies,
          (last) => void this.#settleAt(last, cause, outcome),
          (error) => this.#retry(bodies, cause, outcome, error, next),
        );
      });
    } else this.#fail(error);
  }

  /** Settles with the end whose terminal record has the sequence `last`. */
  #settleAt(last: number, cause: TerminalCause, outcome: Outcome): CallEnd {
    return this.#settle({ call: this.call, sequence: last, cause, outcome });
  }

  #settle(end: CallEnd): CallEnd {
    this.#trace?.end(end);
    // The caller hears of the end a microtask after the commit, whose journal may commit at once: what the Tool
    // does right after its finish (a ctx call it is refused, a reply it reads) runs before the caller moves on.
    inMicrotask(() => this.#end.resolve(end));
    this.#onEnded(this);
    return end;
  }

  #fail(error: unknown): void {
    this.#trace?.fail(error);
    // Marked handled first: a caller that never waits for the end must not see an unhandled rejection.
    this.ended.catch(ignore);
    this.#end.reject(error);
    this.#onEnded(this, error);
  }

  /** The terminal record the journal already has for this call. */
  async #recordedEnd(refused: BrainError): Promise<CallEnd> {
    const records = await this.#journal.read(this.#sessionId, { from: this.call });
    const end = records.find((record) => record.kind === "tool_call_finished" && record.call === this.call);
    if (end?.kind !== "tool_call_finished") throw refused;
    return { call: this.call, sequence: end.sequence, cause: end.cause, outcome: end.outcome };
  }

  /** Records one late report, up to {@linkcode BRAIN_MAX_LATE_RECORDS} per call; past that rejects `budget_exceeded`. */
  #late(cause: string, failed: (error: unknown) => void = ignore): Promise<void> {
    if (this.#lates >= BRAIN_MAX_LATE_RECORDS) {
      return Promise.reject(
        new BrainError("budget_exceeded", `call ${this.call} already has ${BRAIN_MAX_LATE_RECORDS} late reports`, {
          details: { call: this.call, maxLateRecords: BRAIN_MAX_LATE_RECORDS },
        }),
      );
    }
    this.#lates++;
    return this.#commit([{ kind: "tool_call_late", call: this.call, cause }], ignore, failed);
  }

  /**
   * Appends `bodies` once every earlier commit of the call has settled (at once
   * when none is in flight), then continues with `next`, or `failed` when the
   * append fails (without it, the failure rejects).
   */
  #commit<T>(
    bodies: RecordBody[],
    next: (last: number) => T | Promise<T>,
    failed?: (error: unknown) => T | Promise<T>,
  ): Promise<T> {
    let last;
    try {
      last = this.#committedNow(bodies);
    } catch (error) {
      return failed ? settledWith(failed, error) : Promise.reject(error);
    }
    return last === undefined
      ? this.#commitLater(bodies, (records) => next(lastSequence(records)), failed)
      : settledWith(next, last);
  }

  /**
   * The sequence of the last record of `bodies`, committed before this returns,
   * when the journal commits at once and none of the call's commits is in
   * flight; else undefined. Throws what the journal refuses the commit with.
   */
  #committedNow(bodies: RecordBody[]): number | undefined {
    if (this.#inFlight !== 0 || !this.#appendNow) return undefined;
    return this.#appendNow(this.#sessionId, bodies, firstSequence) + bodies.length - 1;
  }

  /** {@linkcode #commit} through the journal's promise, after the call's commits in flight. */
  #commitLater<T>(
    bodies: RecordBody[],
    next: (records: JournalRecord[]) => T | Promise<T>,
    failed?: (error: unknown) => T | Promise<T>,
  ): Promise<T> {
    let appended;
    if (this.#inFlight === 0) appended = this.#append(bodies);
    else {
      // Read now, while the Tool's objects are as it passed them: the append waits for the commits in flight.
      const held = heldBodies(bodies);
      appended = after(this.#last!, () => this.#append(held));
    }
    this.#inFlight++;
    const continued = appended.then((records) => {
      this.#inFlight--;
      return next(records);
    }, (error) => {
      this.#inFlight--;
      if (failed) return failed(error);
      throw error;
    });
    this.#last = continued;
    return continued;
  }

  #append(bodies: RecordBody[]): Promise<JournalRecord[]> {
    let appended;
    try {
      appended = this.#journal.append(this.#sessionId, bodies);
    } catch (error) {
      return Promise.reject(error);
    }
    // A journal that commits in this process's memory answers every commit; another may fail one that landed.
    if (this.#appendNow) return appended;
    return appended.then((records) => this.#answer(records), (error) => this.#readBack(bodies, error));
  }

  #answer(records: JournalRecord[]): JournalRecord[] {
    this.#answered = records[records.length - 1].sequence;
    return records;
  }

  /**
   * After a commit the store failed with its outcome unknown (`storage_unavailable`,
   * a connection cut after the write, say): its records if it landed, as if the
   * answer had arrived; else the error, knowing nothing was written, so what the
   * Tool does next (a retry) lands once. The call's next commit waits for this.
   */
  async #readBack(bodies: RecordBody[], error: unknown): Promise<JournalRecord[]> {
    if (!(error instanceof BrainError && error.code === "storage_unavailable")) throw error;
    const stopping = ownerStopping(this.#journal);
    const landed = await landedCommit(this.#journal, this.#sessionId, this.call, this.#answered, bodies, stopping);
    if (landed === undefined) throw error;
    return this.#answer(landed);
  }
}

function ignore(): void {}

/** Ignores a late record's failed commit, but for a closed journal: its Brain closed (`brain_closed`). */
function refusedClosed(error: unknown): void {
  if (error instanceof BrainError && error.code === "journal_closed") {
    throw new BrainError("brain_closed", "this Brain is closed", { cause: error });
  }
}

/** A promise of `next(value)`, rejected with what it throws. */
function settledWith<A, T>(next: (value: A) => T | Promise<T>, value: A): Promise<T> {
  try {
    return Promise.resolve(next(value));
  } catch (error) {
    return Promise.reject(error);
  }
}

function lastSequence(records: JournalRecord[]): number {
  return records[records.length - 1].sequence;
}

/** Runs `next` once `previous` settles, however it settles. */
function after<T>(previous: Promise<unknown>, next: () => Promise<T>): Promise<T> {
  return previous.then(next, next);
}

function sameEnd(end: CallEnd): CallEnd {
  return end;
}

function resultSequence(end: CallEnd): number {
  return end.sequence - 1;
}

function ownFinish(end: CallEnd): Finished {
  return new Finished(end.sequence, false);
}

function lateFinish(end: CallEnd): Finished {
  return new Finished(end.sequence, true);
}

/** Codes of store failures a terminal commit is tried again after. */
const RETRIED = new Set<string | undefined>(["storage_unavailable", "storage_full", "journal_conflict"]);
/** Pauses before each retry of a failed terminal commit. */
const TERMINAL_RETRY_MS = [50, 200, 1_000, 3_000];

const defaultMessage = {
  timeout: "the call's deadline passed",
  cancelled: "the caller cancelled the call",
  unknown: "the connection was lost after dispatch; the call's outcome is unknown",
} as const;

function resultBody(call: number, { outcome, content }: PublishedResult): RecordBody {
  return content === undefined
    ? { kind: "tool_result", call, outcome }
    : { kind: "tool_result", call, outcome, content };
}

/**
 * The bytes `result` charges to the emitted-bytes budget, or why a journal
 * would refuse it (an outcome that is not JSON, content that is not a string).
 */
function resultSize(result: PublishedResult): number | string {
  let outcome: unknown, content: unknown;
  try {
    ({ outcome, content } = result);
  } catch (error) {
    return unreadableResult(error);
  }
  const size = jsonSize(outcome);
  if (size < 0) return `the call's result is not JSON: ${findNonJson(outcome, "$.outcome")}`;
  if (content !== undefined && typeof content !== "string") return "the call's result content is not a string";
  return size + contentSize(content);
}

/** The bytes a result's content charges, once it is known to be a string when there is one. */
function contentSize(content: string | undefined): number {
  return content === undefined ? 0 : utf8Length(content);
}

/** True for a result whose outcome is `ok`; false also for one that cannot be read (a getter or Proxy that throws). */
function isOk(result: PublishedResult): boolean {
  try {
    return result.outcome.status === "ok";
  } catch {
    return false;
  }
}

function unreadableResult(error: unknown): string {
  return `the call's result cannot be read: ${errorText(error)}`;
}

function budgetFailure(error: BrainError): Outcome {
  return fail("budget_exceeded", error.message);
}

/** Frozen copies of `bodies`; the bodies themselves when one is not JSON, for the journal to refuse in its turn. */
function heldBodies(bodies: RecordBody[]): RecordBody[] {
  try {
    return bodies.map(heldRecordBody);
  } catch {
    return bodies;
  }
}
