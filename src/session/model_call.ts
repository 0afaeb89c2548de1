import { type AppendNow, appendNowOf, firstSequence, type Journal } from "../journal/journal.ts";
import type { ConversationRequest, RecordBody } from "../journal/records.ts";
import { checkModelResult } from "../model/request.ts";
import { isInstance } from "../outcome/known_keys.ts";
import { errorText } from "../util/error_text.ts";
import type { ModelCallOrigin, ModelResult, NormalizedModelRequest, SessionModel } from "../model/types.ts";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import { fail, ok, type Outcome } from "../outcome/outcome.ts";
import { raceSignal } from "../util/signal.ts";
import type { Activation } from "./activation.ts";
import { AssistantDeltas } from "./assistant_deltas.ts";
import { traceModelCall } from "../telemetry/model_call_trace.ts";

/** Who is calling, on whose budget, and what stops the call. */
export interface ModelCallScope {
  /** The Agentloop, or the Tool call (name and sequence) making the request. */
  origin: ModelCallOrigin;
  /** The activation whose model-call budget the call takes from. */
  activation: Activation;
  /** Aborting stops the pending request; its outcome is then `unknown`. */
  signal: AbortSignal;
  /** The W3C `traceparent` of the turn or Tool call making the request, parent of its span. */
  traceparent?: string;
}

/** A model request built from the journal, with what its `model_call_started` record keeps of it. */
export interface JournaledRequest {
  /** The request the provider receives. */
  request: NormalizedModelRequest;
  /** What the journal keeps of it. */
  conversation: ConversationRequest;
  /** Called with the sequence of the request's `model_call_started` once it committed. */
  started(sequence: number): void;
}

/**
 * Every model call of one session, with the session's fixed provider, model and
 * credentials. A call is checked, charged to its activation, committed as
 * `model_call_started`, sent once, and its outcome and usage are committed as
 * `model_call_finished` before the response (or the error) returns.
 */
export class ModelCaller {
  #journal: Journal;
  #sessionId: string;
  #model: SessionModel;
  /** The journal's synchronous append, when it has one: a model call's records then commit with no turn between. */
  #appendNow: AppendNow | undefined;

  /** Brain creates one per session handle that has a model. */
  constructor({ journal, sessionId, model }: { journal: Journal; sessionId: string; model: SessionModel }) {
    this.#journal = journal;
    this.#sessionId = sessionId;
    this.#model = model;
    this.#appendNow = appendNowOf(journal);
  }

  /**
   * Calls the model once with a request `normalizeModelRequest` checked, never
   * retrying, and resolves with the response and the sequence of its
   * `model_call_started` record. An interrupted call ends `unknown` and rejects
   * with the signal's reason.
   */
  call(request: NormalizedModelRequest, scope: ModelCallScope): Promise<{ call: number; result: ModelResult }> {
    if (scope.signal.aborted) return Promise.reject(scope.signal.reason);
    return this.#call(request, { request }, undefined, scope);
  }

  /**
   * Like `call`, for a request the Agentloop built from committed conversation
   * records: it is not checked again (each record was checked when it
   * committed), and it is journaled as `conversation`, by reference.
   */
  callConversation(
    { request, conversation, started }: JournaledRequest,
    scope: ModelCallScope,
  ): Promise<{ call: number; result: ModelResult }> {
    if (scope.signal.aborted) return Promise.reject(scope.signal.reason);
    return this.#call(request, { conversation }, started, scope);
  }

  async #call(
    request: NormalizedModelRequest,
    journaled: { request: NormalizedModelRequest } | { conversation: ConversationRequest },
    committed: ((sequence: number) => void) | undefined,
    { origin, activation, signal, traceparent }: ModelCallScope,
  ): Promise<{ call: number; result: ModelResult }> {
    activation.chargeModelCall();
    const { provider, model, credentials = {} } = this.#model;
    const trace = traceModelCall({ sessionId: this.#sessionId, provider: provider.name, model, origin }, traceparent);
    const call = await this.#commit({
      kind: "model_call_started",
      origin,
      activation: activation.id,
      provider: provider.name,
      model,
      ...journaled,
    });
    committed?.(call);
    trace?.started(call);
    const finish = async (outcome: Outcome, result?: ModelResult) => {
      const body: RecordBody = { kind: "model_call_finished", call, outcome };
      if (result?.usage) body.usage = result.usage;
      await this.#commit(body);
      trace?.end(outcome, result?.usage);
    };
    // Only the Agentloop's own turns are conversational; a Tool's ctx.model streams no deltas.
    const deltas = origin.kind === "agentloop" ? new AssistantDeltas(this.#journal, this.#sessionId, call) : undefined;
    let result: ModelResult;
    try {
      if (signal.aborted) throw signal.reason;
      const answer = provider.complete({
        model,
        request,
        credentials,
        signal,
        ...(deltas ? { onDelta: deltas.add } : {}),
      });
      result = checkModelResult(await raceSignal(answer, signal), provider.name);
    } catch (error) {
      const { outcome, thrown } = failure(error, signal);
      await deltas?.close();
      await finish(outcome);
      throw thrown;
    }
    await deltas?.close();
    const { usage: _usage, ...response } = result;
    await finish(ok(response as unknown as JsonValue), result);
    // Frozen JSON, as checked: the response its `model_call_finished` record keeps, with the usage beside it.
    return { call, result };
  }

  /** Commits `body` and answers its sequence: at once through a synchronous append, else through the promise. */
  async #commit(body: RecordBody): Promise<number> {
    if (this.#appendNow) return this.#appendNow(this.#sessionId, [body], firstSequence);
    const [record] = await this.#journal.append(this.#sessionId, [body]);
    return record.sequence;
  }
}

function failure(error: unknown, signal: AbortSignal): { outcome: Outcome; thrown: unknown } {
  if (signal.aborted) {
    return { outcome: { status: "unknown", message: "the model call was interrupted" }, thrown: signal.reason };
  }
  if (!isInstance(error, BrainError)) {
    // Whatever a provider throws, even a value whose message or prototype cannot be read, ends the call model_error.
    const message = errorText(error) || "the model provider failed";
    return {
      outcome: fail("model_error", message),
      thrown: new BrainError("model_error", message, { cause: error }),
    };
  }
  if (error.code === "timeout") return { outcome: { status: "timeout", message: error.message }, thrown: error };
  if (error.code === "connection_lost") {
    return { outcome: { status: "unknown", message: error.message }, thrown: error };
  }
  const details = error.details as { retryable?: unknown } | undefined;
  const retryable = typeof details?.retryable === "boolean" ? details.retryable : undefined;
  return {
    outcome: fail(error.code, error.message, {
      ...(retryable === undefined ? {} : { retryable }),
      ...(error.details === undefined ? {} : { details: error.details }),
    }),
    thrown: error,
  };
}
