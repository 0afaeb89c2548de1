import { checkReadOptions } from "../journal/read_options.ts";
import { promised } from "../util/promised.ts";
import type { AllowList } from "../contract/grant.ts";
import { uniqueBindings } from "./bindings.ts";
import type { CreatedEnvironment } from "./created_env.ts";
import { ModelService } from "./model_service.ts";
import { SessionEnvironments } from "./environments.ts";
import { type AppendNow, appendNowOf, type Journal, type ReadOptions } from "../journal/journal.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "../journal/records.ts";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import { BRAIN_MAX_INPUT_BYTES, checkCancelReason, checkInputSize } from "../contract/budgets.ts";
import type { Invocation } from "../contract/call.ts";
import type { BrainResources, PlacedTool } from "../contract/placement.ts";
import { Activation, checkActivationOf, sessionActivation } from "./activation.ts";
import { dispatchCall } from "./dispatch.ts";
import { type CallOptions, checkCallInput, checkCallOptions, resolveTarget } from "./call_arguments.ts";
import { handleEnded } from "./handle_ended.ts";
import { type CallEnd, CallState } from "./call_state.ts";
import { type Awaited, settledBy } from "./settled_by.ts";
import { type CommittedIntent, committedIntent, IntentCommits } from "./intent_commits.ts";
import { traceToolCall } from "../telemetry/tool_call_trace.ts";
import { within } from "../telemetry/within.ts";
import { SlotList } from "../util/slot_list.ts";
import { checkSendArguments } from "./conversation.ts";
import type { AssistantMessage, Conversation, ConversationParts, SendOptions } from "./conversation.ts";
import type { BrainSession, ToolCall } from "./handle.ts";
import type { ModelCaller } from "./model_call.ts";
import { inMicrotask } from "../util/microtask.ts";

/** What a Brain gives each session it opens. */
export interface SessionParts {
  journal: Journal;
  meta: SessionMeta;
  tools: readonly PlacedTool[];
  workspaces: Map<string, string>;
  allow: AllowList | undefined;
  /** The Tool-created Environments the session's journal keeps, admitted again. */
  created?: readonly CreatedEnvironment[];
  maxEmittedBytes: number;
  /** Bytes of one call's input JSON; {@linkcode BRAIN_MAX_INPUT_BYTES} by default. */
  maxInputBytes?: number;
  /** Model calls one activation may make. */
  maxModelCalls?: number;
  /** The session's model calls, when it has a model. */
  models?: ModelCaller;
  /** Creates the session's Agentloop, when it has a model. */
  conversation?: (parts: ConversationParts) => Conversation;
  /** Called once when the handle ends; the end waits for it. */
  /** What the Brain lends implementations; every dispatch carries it. */
  resources?: BrainResources;
  onEnd: (session: Session) => void | Promise<void>;
}

/**
 * A session handle: its journal, its placed Tools and their open calls.
 * Create one with `brain.sessions.create`; open an existing one with `brain.sessions.get`.
 */
export class Session implements BrainSession {
  /** Session id. */
  readonly id: string;
  #journal: Journal;
  /** The journal's synchronous append, when it has one. */
  #appendNow: AppendNow | undefined;
  #tools: Map<string, PlacedTool>;
  #maxEmittedBytes: number;
  #maxInputBytes: number;
  #maxModelCalls: number | undefined;
  #models: ModelCaller | undefined;
  #conversation: Conversation | undefined;
  #workspaces: Map<string, string>;
  #environments: SessionEnvironments;
  #modelService: ModelService | undefined;
  /** The session's model execution service, started on first use. */
  #startedModelService = (): ModelService => this.#modelService ??= new ModelService();
  #open = new SlotList<CallState>();
  #intents: IntentCommits;
  /** Intents being committed through the journal's promise: the session's end waits for their calls to open. */
  #starting = new Set<Promise<unknown>>();
  #ended = false;
  /** Why the handle ended on its own (its store, another owner), when it did. */
  #lost: BrainError | undefined;
  #closed = new AbortController();
  #onEnd: (session: Session) => void | Promise<void>;
  #resources: BrainResources | undefined;

  /** Brain constructs sessions; applications use `brain.sessions`. */
  constructor(parts: SessionParts) {
    this.id = parts.meta.id;
    this.#journal = parts.journal;
    this.#intents = new IntentCommits(parts.journal, this.id);
    this.#appendNow = appendNowOf(parts.journal);
    this.#tools = new Map(parts.tools.map((placed) => [placed.tool.name, placed]));
    this.#maxEmittedBytes = parts.maxEmittedBytes;
    this.#maxInputBytes = parts.maxInputBytes ?? BRAIN_MAX_INPUT_BYTES;
    this.#maxModelCalls = parts.maxModelCalls;
    this.#models = parts.models;
    this.#workspaces = parts.workspaces;
    this.#environments = new SessionEnvironments(
      this.id,
      uniqueBindings(parts.tools).values(),
      parts.workspaces,
      parts.allow,
      parts.created,
    );
    this.#onEnd = parts.onEnd;
    this.#resources = parts.resources;
    if (parts.models && parts.conversation) {
      this.#conversation = parts.conversation({
        session: this,
        models: parts.models,
        append: (bodies) => this.#journal.append(this.id, bodies),
      });
    }
  }

  /** The Tools whose handlers this handle holds. */
  get tools(): PlacedTool[] {
    return [...this.#tools.values()];
  }

  /** Real path of a binding's workspace in this session, when its grant has one. */
  workspace(envName: string): string | undefined {
    return this.#workspaces.get(envName);
  }

  /**
   * Aborts once the handle has ended and its open calls have settled. Its reason
   * is why the handle ended on its own (see {@linkcode lose}), or `session_closed`
   * for an {@linkcode end} asked for.
   */
  get closed(): AbortSignal {
    return this.#closed.signal;
  }

  /** A new activation with this session's emitted-bytes budget. */
  activation(): Activation {
    return sessionActivation(this.id, this.#budgets());
  }

  /** The budgets of a new activation; one a call makes for itself reaches no caller, so no session owns it. */
  #budgets() {
    return { maxEmittedBytes: this.#maxEmittedBytes, maxModelCalls: this.#maxModelCalls };
  }

  /**
   * Commits the call's intent, dispatches it once and returns its handle.
   * Bad arguments throw a BrainError before anything is committed.
   */
  start(target: PlacedTool | string, input: JsonValue, options?: CallOptions): Promise<ToolCall> {
    let request: CallRequest;
    try {
      request = this.#request(target, input, options);
    } catch (error) {
      return Promise.reject(error);
    }
    const end = Promise.withResolvers<CallEnd>();
    const awaited: Awaited = { sessionId: this.id, tool: request.placed.tool.name };
    const handle = this.#commitIntent(request).then((started) => {
      const state = this.#begin(request, started, end);
      awaited.call = state.call;
      return Object.freeze({
        sequence: state.call,
        ended: settledBy(end.promise, request.deadline, awaited),
        cancel: (message?: string) => {
          try {
            return state.stop("cancelled", checkCancelReason(message));
          } catch (error) {
            return Promise.reject(error);
          }
        },
      });
    });
    return settledBy(handle, request.deadline, awaited);
  }

  /** Starts a call and waits for its end. */
  call(target: PlacedTool | string, input: JsonValue, options?: CallOptions): Promise<CallEnd> {
    let request: CallRequest;
    try {
      request = this.#request(target, input, options);
    } catch (error) {
      return Promise.reject(error);
    }
    const end = Promise.withResolvers<CallEnd>();
    if (request.deadline === undefined && this.#appendNow) {
      // A journal that commits at once: the intent is committed here, and the call dispatches in a microtask.
      let started: CommittedIntent;
      try {
        started = this.#appendNow(this.id, [request.intent], committedIntent);
      } catch (error) {
        return Promise.reject(error);
      }
      inMicrotask(() => this.#beginOrReject(request, started, end));
      return end.promise;
    }
    const committed = this.#commitIntent(request);
    if (request.deadline !== undefined) {
      // Bounded from here, not from the intent's commit: a store that stops answering holds that commit too.
      const awaited: Awaited = { sessionId: this.id, tool: request.placed.tool.name };
      const begun = committed.then((started) => {
        awaited.call = this.#begin(request, started, end).call;
        return end.promise;
      });
      return settledBy(begun, request.deadline, awaited);
    }
    // Without a deadline the caller waits on the call's own end: no promise stands between it and the terminal commit.
    committed.then((started) => this.#beginOrReject(request, started, end), end.reject);
    return end.promise;
  }

  /** Commits the call's intent through the journal's promise, which the session's end waits for. */
  #commitIntent(request: CallRequest): Promise<CommittedIntent> {
    const committed = this.#intents.commit(request.intent);
    this.#starting.add(committed);
    const forget = () => void this.#starting.delete(committed);
    committed.then(forget, forget);
    return committed;
  }

  /** {@linkcode #begin}, rejecting `end` when it throws. */
  #beginOrReject(request: CallRequest, started: CommittedIntent, end: PromiseWithResolvers<CallEnd>): void {
    try {
      this.#begin(request, started, end);
    } catch (error) {
      end.reject(error);
    }
  }

  /** Checks a call's target, input and options and builds its intent; throws a BrainError for bad ones. */
  #request(target: PlacedTool | string, given: JsonValue, options: CallOptions | undefined): CallRequest {
    if (this.#ended) throw this.#endedError();
    const placed = resolveTarget(this.id, this.#tools, target);
    const { input, size } = checkCallInput(placed.tool.name, given);
    const checked = checkCallOptions(options);
    checkActivationOf(this.id, checked.activation);
    checkInputSize(placed.tool.name, size, this.#maxInputBytes);
    const { deadline } = checked;
    const activation = checked.activation ?? new Activation(this.#budgets());
    const tool = placed.tool.name;
    const intent: Intent = deadline === undefined
      ? { kind: "tool_call_started", tool, input, activation: activation.id }
      : { kind: "tool_call_started", tool, input, deadline, activation: activation.id };
    if (checked.toolCallId !== undefined) intent.toolCallId = checked.toolCallId;
    return { placed, input, checked, deadline, activation, intent };
  }

  /** Opens the call whose intent committed as `started` and dispatches it; `end` settles with its end. */
  #begin(
    { placed, input, checked, activation, intent }: CallRequest,
    started: CommittedIntent,
    end: PromiseWithResolvers<CallEnd>,
  ): CallState {
    const environment = placed.env?.kind ?? placed.implementation?.kind ?? "host";
    const trace = traceToolCall(this.id, intent.tool, started, environment, checked.traceparent);
    const state = new CallState(
      this.#journal,
      this.id,
      started.sequence,
      intent,
      activation,
      end,
      this.#callEnded,
      this.#models,
      trace,
    );
    this.#open.add(state);
    if (this.#ended) {
      // The intent committed as the session ended: the call ends without a dispatch.
      void state.stop("cancelled", SESSION_ENDED).catch(() => {});
      return state;
    }
    state.arm();
    if (checked.signal) state.cancelOn(checked.signal);
    const invocation = {
      sessionId: this.id,
      sequence: state.call,
      tool: placed.tool.name,
      input,
      deadline: checked.deadline,
    };
    if (trace) {
      within(trace, () => this.#dispatch(placed, { ...invocation, traceparent: trace.traceparent }, state));
    } else this.#dispatch(placed, invocation, state);
    return state;
  }

  /** Told once each call's end settles, with the error when the store refused it. */
  #callEnded = (state: CallState, error?: unknown): void => {
    this.#open.delete(state);
    // The store refused the call's end for good: this handle gives the session up, and its next owner ends the call.
    if (error instanceof BrainError && STORE_FAILURES.has(error.code)) void this.lose(error);
  };

  /** What a request of an ended handle fails with: `session_closed`, caused by why it ended on its own. */
  #endedError(): BrainError {
    if (!this.#lost) return handleEnded(this.id);
    return new BrainError("session_closed", `session ${this.id} has ended: ${this.#lost.message}`, {
      cause: this.#lost,
    });
  }

  /** Committed records in sequence order. */
  async read(options?: ReadOptions): Promise<JournalRecord[]> {
    const range = options === undefined ? undefined : checkReadOptions("read options", options);
    try {
      return await this.#journal.read(this.id, range);
    } catch (error) {
      // An ended handle over a closed journal: its Brain closed (which closes its journal). Say so, as a remote Brain does.
      if (!(this.#ended && error instanceof BrainError && error.code === "journal_closed")) throw error;
      throw new BrainError("brain_closed", "this Brain is closed", { cause: error });
    }
  }

  /** Follows committed records from `from` on, until `signal` aborts or the Brain closes. */
  records(options?: { from?: number; signal?: AbortSignal }): AsyncIterable<JournalRecord> {
    return this.#journal.subscribe(
      this.id,
      options === undefined ? undefined : checkReadOptions("records options", options, ["signal"]),
    );
  }

  /**
   * Sends a user message to the session's Agentloop and resolves with the reply
   * that ends the activation answering it. Follow `records()` to see every turn.
   * Fails with `model_unavailable` when the session has no model, and with
   * `payload_too_large` for a message over 4 MiB of UTF-8, committing nothing.
   *
   * @example
   * ```ts
   * import { Brain } from "@aexhq/brain";
   * import { ScriptedProvider } from "@aexhq/brain/testing";
   * const brain = new Brain();
   * try {
   *   const provider = new ScriptedProvider(["Hello!"]);
   *   const session = await brain.sessions.create({ model: { provider, model: "demo" } });
   *   console.log((await session.send("Hi")).content); // "Hello!"
   * } finally {
   *   await brain.close();
   * }
   * ```
   */
  send(content: string, options?: SendOptions): Promise<AssistantMessage> {
    if (this.#ended) return Promise.reject(this.#endedError());
    const conversation = this.#conversation;
    // Arguments first, as a remote Brain checks them before asking its server: a bad message is bad with or without a model.
    return promised(() => checkSendArguments(content, options)).then((read) => {
      if (!conversation) {
        throw new BrainError(
          "model_unavailable",
          `session ${this.id} has no model: create or open it with one, as in ` +
            "brain.sessions.create({ tools, model: { provider, model } })",
        );
      }
      return conversation.send(content, read);
    });
  }

  /** Interrupts the Agentloop's running activation: its pending model call ends `unknown`; Tools keep running. */
  interrupt(): void {
    this.#conversation?.interrupt();
  }

  /**
   * Ends the handle on its own for `reason` (the store refused a call's end for
   * good, another Brain took the session over): as {@linkcode end}, and later
   * requests fail `session_closed` caused by `reason`.
   */
  lose(reason: BrainError): Promise<void> {
    if (!this.#ended) this.#lost = reason;
    return this.end();
  }

  /** Ends the session: the Agentloop stops, open calls end `cancelled` and its handlers are released. */
  async end(): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    await this.#conversation?.close();
    // Calls whose intents are committing open first, so they end here too.
    while (this.#starting.size > 0) await Promise.allSettled(this.#starting);
    const open = this.#open.values();
    // A call already ending keeps its own cause; the end waits for its terminal record.
    await Promise.allSettled(open.map((state) => state.ending ? state.ended : state.stop("cancelled", SESSION_ENDED)));
    this.#closed.abort(this.#lost ?? this.#endedError());
    this.#tools.clear();
    this.#environments.close();
    await this.#modelService?.close();
    await this.#onEnd(this);
  }

  #dispatch(placed: PlacedTool, invocation: Invocation, state: CallState): void {
    dispatchCall({
      placed,
      invocation,
      sink: state,
      environments: this.#environments,
      workspace: placed.env && this.#workspaces.get(placed.env.name),
      modelService: this.#startedModelService,
      resources: this.#resources,
    });
  }
}

/** The body of a `tool_call_started` record. */
type Intent = Extract<RecordBody, { kind: "tool_call_started" }>;

/** A checked call, before its intent commits. */
interface CallRequest {
  placed: PlacedTool;
  input: JsonValue;
  checked: CallOptions;
  deadline: number | undefined;
  activation: Activation;
  intent: Intent;
}

const SESSION_ENDED = "the session ended";

/** Errors of a journal's store that leave a call's end uncommitted. */
const STORE_FAILURES = new Set<string>(["storage_unavailable", "storage_full", "journal_conflict"]);
