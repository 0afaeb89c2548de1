import type { EnvironmentControl } from "./control.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { Outcome } from "../outcome/outcome.ts";
import type { ModelRequest, ModelResult } from "../model/types.ts";

/** Options for a published result. */
export interface ResultOptions {
  /** Optional model-facing text; it never replaces the structured output. */
  content?: string;
}

/**
 * What `ctx.finish()` resolves with. Return it from `run` (`return ctx.finish(v)`)
 * so the SDK knows the result is already published.
 */
export class Finished {
  /** Sequence of the call's terminal record. */
  readonly sequence: number;
  /** True when the call had already ended before this finish (it was recorded as late). */
  readonly late: boolean;

  /** Created by the SDK; applications receive it from `ctx.finish()`. */
  constructor(sequence: number, late: boolean) {
    this.sequence = sequence;
    this.late = late;
  }
}

/** The second argument of a Tool's `run` function. */
export interface ToolContext<Options = Record<string, never>, Output = JsonValue> {
  /** The factory options, parsed once and frozen. */
  readonly options: Readonly<Options>;
  /** The owning session. */
  readonly sessionId: string;
  /** Sequence of this call's `tool_call_started` record; with `sessionId` it names the call. */
  readonly sequence: number;
  /** The caller-owned absolute deadline (ms since the epoch), or undefined for unlimited. */
  readonly deadline: number | undefined;
  /** Aborted, best effort, when the call ends by deadline, cancellation or connection loss. */
  readonly signal: AbortSignal;
  /**
   * Appends a durable extension Event; resolves with its committed sequence.
   * `data` is read when called: the record is what it held then.
   */
  emit(event: string, data?: JsonValue): Promise<number>;
  /** Appends a validated result; resolves with its committed sequence. */
  emitResult(value: Output | Outcome, options?: ResultOptions): Promise<number>;
  /**
   * Optionally appends a result, then commits completion once earlier emissions have. After the call ended
   * it resolves with `late: true`; after its Brain closed (nothing more can be recorded) it rejects `brain_closed`.
   * Content represents the result, so it needs one: `finish(undefined, { content })` rejects `invalid_argument`
   * and commits nothing (the call stays open).
   */
  finish(value?: Output | Outcome, options?: ResultOptions): Promise<Finished>;
  /**
   * Calls the session's model with independent messages and returns its response.
   * Usage and outcome are journaled first; the call's end or deadline stops a pending request.
   */
  model(request: ModelRequest): Promise<ModelResult>;
  /**
   * The session's Environments, as far as the Tool's binding grants (`control`
   * on its Environment); ungranted operations reject with `permission_denied`.
   */
  readonly environments: EnvironmentControl;
}
