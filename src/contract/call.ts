import type { Finished } from "./context.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { Outcome } from "../outcome/outcome.ts";
import type { ModelRequest, ModelResult } from "../model/types.ts";
import type { JournalRecord, RecordBody, TerminalCause } from "../journal/records.ts";
import { BrainError, type BrainErrorCode } from "../outcome/errors.ts";

/** One dispatched Tool call, as an executor receives it. */
export interface Invocation {
  /** The owning session. */
  sessionId: string;
  /** Sequence of the call's `tool_call_started` record. */
  sequence: number;
  /** Name of the placed Tool. */
  tool: string;
  /** The raw JSON input, before the Tool's schema parses it. */
  input: JsonValue;
  /** Absolute deadline in ms since the epoch, or undefined for unlimited. */
  deadline: number | undefined;
  /** The W3C `traceparent` of the call's span when tracing, so a remote executor's spans join the trace. */
  traceparent?: string;
}

/** A published result: an outcome with optional model-facing text. */
export interface PublishedResult {
  /** The validated outcome. */
  outcome: Outcome;
  /** Optional model-facing text. */
  content?: string;
}

/**
 * Where an executor reports one call. Brain implements it; every method commits
 * to the journal before it resolves, in the order the methods were called.
 */
export interface CallSink {
  /** Aborted when the call ends for any reason. */
  readonly signal: AbortSignal;
  /** Commits an extension Event; rejects with `call_finished` once the call is ending. */
  emit(event: string, data: JsonValue): Promise<number>;
  /**
   * Commits an extension Event before it returns its sequence, when this sink can
   * (nothing of the call in flight, a journal that commits at once); undefined
   * when it cannot, and `emit` then commits it. Throws what `emit` rejects with.
   */
  emitNow?(event: string, data: JsonValue): number | undefined;
  /** Commits a result; a non-success outcome also ends the call. */
  emitResult(result: PublishedResult): Promise<number>;
  /** Ends the synchronous phase, publishing `result` first when given. */
  returned(result?: PublishedResult): Promise<void>;
  /**
   * Ends the call: `finish` when the Tool finished, `error` when running it failed,
   * `unknown` when the executor lost the call without a reliable result.
   */
  finish(result: PublishedResult | undefined, cause?: "finish" | "error" | "unknown"): Promise<Finished>;
  /**
   * {@linkcode finish}, returning the `Finished` itself when this sink committed
   * the end before it returns (a journal that commits at once), else its promise.
   * `outcomeSize` is the UTF-8 size of the result's outcome as JSON, when the
   * caller counted it as it copied the outcome: the sink then does not count it again.
   */
  finishNow?(
    result: PublishedResult | undefined,
    cause?: "finish" | "error" | "unknown",
    outcomeSize?: number,
  ): Finished | Promise<Finished>;
  /**
   * Calls the session's model for this call, on its activation's model-call budget;
   * the call's end stops a pending request. Rejects with `call_finished` once the call is ending.
   */
  model(request: ModelRequest): Promise<ModelResult>;
  /**
   * Commits Environment changes a Tool made through `ctx.environments`, in order
   * with the call's other reports; resolves with the committed records.
   */
  record(bodies: RecordBody[]): Promise<JournalRecord[]>;
}

const reasonCodes: Record<TerminalCause, BrainErrorCode> = {
  finish: "call_finished",
  error: "call_finished",
  timeout: "timeout",
  cancelled: "cancelled",
  unknown: "connection_lost",
};

/** One frozen reason per cause, built once: ending a call allocates no error. */
const reasons = new Map<TerminalCause, BrainError>(
  (Object.keys(reasonCodes) as TerminalCause[]).map((cause) => [
    cause,
    Object.freeze(new BrainError(reasonCodes[cause], `the call ended: ${cause}`, { details: { cause } })),
  ]),
);
const causes = new Map([...reasons].map(([cause, reason]) => [reason, cause]));

/**
 * The `ctx.signal.reason` of a call that ended for `cause`, the same object in
 * every transport: code `timeout`, `cancelled`, `connection_lost` (the call's
 * outcome is unknown) or `call_finished` (the Tool finished), and
 * `details.cause` naming the first terminal cause.
 *
 * @example
 * ```ts ignore
 * const reason = endedReason("timeout");
 * console.log(reason.code, endedCause(reason)); // "timeout" "timeout"
 * ```
 */
export function endedReason(cause: TerminalCause): BrainError {
  return reasons.get(cause)!;
}

/** The terminal cause an abort `reason` names, when it is one of {@linkcode endedReason}'s. */
export function endedCause(reason: unknown): TerminalCause | undefined {
  return causes.get(reason as BrainError);
}

/** True when `value` is a {@linkcode TerminalCause}. */
export function isTerminalCause(value: unknown): value is TerminalCause {
  return typeof value === "string" && Object.hasOwn(reasonCodes, value);
}
