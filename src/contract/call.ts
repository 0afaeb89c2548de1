import type { Finished } from "./context.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { Outcome } from "../outcome/outcome.ts";
import type { ModelRequest, ModelResult } from "../model/types.ts";

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
   * Calls the session's model for this call, on its activation's model-call budget;
   * the call's end stops a pending request. Rejects with `call_finished` once the call is ending.
   */
  model(request: ModelRequest): Promise<ModelResult>;
}
