import type { ModelToolCall } from "../model/types.ts";
import { allKeys, readOptions } from "../outcome/known_keys.ts";
import { BrainError } from "../outcome/errors.ts";
import type { JournalRecord, RecordBody } from "../journal/records.ts";
import type { Activation } from "../session/activation.ts";
import {
  type AssistantMessage,
  awaitReply,
  type Conversation,
  type ConversationParts,
  type SendOptions,
  type SessionPort,
} from "../session/conversation.ts";
import type { ModelCaller } from "../session/model_call.ts";
import { WakeBatcher } from "./wake.ts";
import { raceSignal } from "../util/signal.ts";
import { formatOutcome } from "./present.ts";
import { LoopView } from "./view.ts";
import { traceTurn } from "../telemetry/turn_trace.ts";

/** Options of a session's Agentloop. */
export interface AgentloopOptions {
  /** The conversation's system prompt; empty by default. */
  system?: string;
  /** Deadline of each Tool call the loop starts, in ms from its start; 5 minutes by default, `Infinity` for none. */
  toolDeadlineMs?: number;
}

/** Default deadline of a Tool call the Agentloop starts. */
export const AGENTLOOP_TOOL_DEADLINE_MS = 300_000;

const AGENTLOOP_OPTIONS = allKeys<AgentloopOptions>({ system: true, toolDeadlineMs: true });

/**
 * Agentloop options read once and checked, before a session is stored: `system`
 * a string, `toolDeadlineMs` a positive number of milliseconds (`Infinity` for none). Throws `invalid_argument`.
 */
export function checkAgentloopOptions(options: AgentloopOptions | undefined): AgentloopOptions | undefined {
  if (options === undefined) return undefined;
  const read = readOptions("agentloop options", options, AGENTLOOP_OPTIONS);
  if (read.system !== undefined && typeof read.system !== "string") {
    throw new BrainError("invalid_argument", `agentloop system must be a string, got a ${typeof read.system}`);
  }
  const { toolDeadlineMs } = read;
  const number = typeof toolDeadlineMs === "number";
  if (
    toolDeadlineMs !== undefined &&
    !(number && toolDeadlineMs > 0 && (toolDeadlineMs <= 1e15 || toolDeadlineMs === Infinity))
  ) {
    throw new BrainError(
      "invalid_argument",
      `toolDeadlineMs must be a positive number of milliseconds (Infinity for none), got ${
        number ? toolDeadlineMs : typeof toolDeadlineMs
      }`,
    );
  }
  return read;
}

/**
 * Observations of the Tool calls the loop started: they wake it after the
 * batching window. A user message wakes it at once.
 */
const observedKinds = new Set<string>([
  "tool_event",
  "tool_result",
  "tool_returned",
  "tool_call_finished",
  "tool_call_late",
]);

interface Waiter {
  sequence: number;
  resolve(reply: AssistantMessage): void;
  reject(error: unknown): void;
}

/**
 * The loop of one session: model turn, then the Tool calls it asked for (placed
 * Tools are advertised with their input JSON Schema), then their results in the
 * journal, then the next turn, until the model answers without tool calls.
 * A user message starts it at once. Background Tools keep running after that;
 * their later committed observations wake the loop (batched for
 * {@linkcode WAKE_BATCH_MS}), and it calls the model again only when there is
 * something model-facing to present.
 */
export class Agentloop implements Conversation {
  #session: SessionPort;
  #models: ModelCaller;
  #append: (bodies: RecordBody[]) => Promise<JournalRecord[]>;
  #system: string;
  #toolDeadlineMs: number;
  #view = new LoopView();
  #batcher = new WakeBatcher(() => this.#kick());
  #stop = new AbortController();
  #interrupt: AbortController | undefined;
  #ready: Promise<void>;
  #following: Promise<void> | undefined;
  #followFrom = 1;
  #running: Promise<void> | undefined;
  #again = false;
  #handled = 0;
  #waiters: Waiter[] = [];

  /** Sessions create their loop; applications use `session.send`. */
  constructor({ session, models, append }: ConversationParts, options: AgentloopOptions = {}) {
    const { system = "", toolDeadlineMs = AGENTLOOP_TOOL_DEADLINE_MS } = checkAgentloopOptions(options)!;
    this.#session = session;
    this.#models = models;
    this.#append = append;
    this.#system = system;
    this.#toolDeadlineMs = toolDeadlineMs;
    this.#ready = this.#load();
    this.#ready.catch(() => {});
  }

  /** Commits a user message and resolves with the final reply of the activation that answers it. */
  async send(content: string, { signal }: SendOptions = {}): Promise<AssistantMessage> {
    if (typeof content !== "string") throw new BrainError("invalid_argument", "a user message must be a string");
    await this.#ready;
    if (this.#stop.signal.aborted) throw new BrainError("session_closed", `session ${this.#session.id} has ended`);
    this.#startFollowing();
    const [record] = await this.#commit([{ kind: "user_message", content }]);
    const reply = new Promise<AssistantMessage>((resolve, reject) => {
      this.#waiters.push({ sequence: record.sequence, resolve, reject });
    });
    this.#kick();
    return awaitReply(reply, signal);
  }

  /** Stops the running activation; its pending model call ends `unknown` and its waiters reject `cancelled`. */
  interrupt(): void {
    this.#interrupt?.abort(new BrainError("cancelled", "the Agentloop was interrupted"));
  }

  /** Stops the loop: interrupts it, stops following the journal and waits for its last commit. */
  async close(): Promise<void> {
    if (this.#stop.signal.aborted) return;
    this.#stop.abort();
    this.#batcher.close();
    this.interrupt();
    await Promise.allSettled([this.#ready, this.#following, this.#running]);
    this.#settle(Infinity, new BrainError("session_closed", `session ${this.#session.id} has ended`));
  }

  async #load(): Promise<void> {
    const history = await this.#session.read();
    this.#view.add(history);
    this.#handled = this.#view.lastUserMessage;
    this.#followFrom = history.length + 1;
    // A session whose loop has never been spoken to has nothing to follow until it is: its calls are not the loop's.
    if (this.#handled > 0) this.#startFollowing();
  }

  #startFollowing(): void {
    if (this.#following) return;
    this.#following = this.#follow(this.#followFrom);
    this.#following.catch(() => {});
  }

  async #follow(from: number): Promise<void> {
    for await (const record of this.#session.records({ from, signal: this.#stop.signal })) {
      this.#view.add([record]);
      if (record.kind === "user_message") this.#kick();
      else if (observedKinds.has(record.kind) && this.#view.started((record as { call: number }).call)) {
        this.#batcher.notify();
      }
    }
  }

  async #commit(bodies: RecordBody[]): Promise<JournalRecord[]> {
    const records = await this.#append(bodies);
    this.#view.add(records);
    return records;
  }

  #kick(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#drain().finally(() => {
      this.#running = undefined;
      if (this.#again && !this.#stop.signal.aborted) {
        this.#again = false;
        this.#kick();
      }
    });
  }

  /** Runs activations while there is something to answer or present. */
  async #drain(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      const lastUser = this.#view.lastUserMessage;
      if (lastUser <= this.#handled && this.#view.observations().length === 0) return;
      this.#handled = lastUser;
      const interrupt = new AbortController();
      this.#interrupt = interrupt;
      const answered = { through: lastUser };
      try {
        const activation = this.#session.activation();
        const reply = await traceTurn(
          this.#session.id,
          activation.id,
          (traceparent) => this.#activate(activation, interrupt.signal, answered, traceparent),
        );
        this.#handled = Math.max(this.#handled, answered.through);
        this.#settle(answered.through, undefined, reply);
      } catch (error) {
        this.#handled = Math.max(this.#handled, answered.through);
        this.#settle(answered.through, error);
        return; // a failed activation is not retried; the next wake tries again
      } finally {
        this.#interrupt = undefined;
      }
    }
  }

  /** One activation: presents new observations, then turns until the model stops calling tools. */
  async #activate(
    activation: Activation,
    signal: AbortSignal,
    answered: { through: number },
    traceparent: string | undefined,
  ): Promise<AssistantMessage> {
    const observations = this.#view.observations();
    if (observations.length > 0) {
      await this.#commit(observations.map(({ call, content, through }) => ({
        kind: "observation_message",
        call,
        content,
        through,
      })));
    }
    for (;;) {
      answered.through = Math.max(answered.through, this.#view.lastUserMessage);
      const tools = this.#session.tools.map(({ advertised }) => ({
        name: advertised.name,
        description: advertised.description,
        inputSchema: advertised.inputSchema,
      }));
      const { call, result } = await this.#models.callConversation(
        this.#view.nextRequest(this.#system, tools),
        { origin: { kind: "agentloop" }, activation, signal, traceparent },
      );
      const [reply] = await this.#commit([{
        kind: "assistant_message",
        modelCall: call,
        content: result.content,
        toolCalls: result.toolCalls,
        ...(result.refusal === undefined ? {} : { refusal: result.refusal }),
      }]);
      if (result.toolCalls.length === 0) return reply as AssistantMessage;
      await this.#runTools(result.toolCalls, activation, signal, traceparent);
    }
  }

  /** Starts each tool call, waits for their synchronous phases, then commits their tool messages together. */
  async #runTools(
    toolCalls: ModelToolCall[],
    activation: Activation,
    signal: AbortSignal,
    traceparent: string | undefined,
  ): Promise<void> {
    const started: { toolCall: ModelToolCall; call?: number; refused?: string }[] = [];
    for (const toolCall of toolCalls) {
      started.push({ toolCall, ...await this.#start(toolCall, activation, traceparent) });
    }
    try {
      await raceSignal(
        Promise.all(started.flatMap(({ call }) => call === undefined ? [] : [this.#view.synchronous(call)])),
        signal,
      );
    } finally {
      await this.#commit(started.map(({ toolCall, call, refused }): RecordBody => {
        if (call === undefined) {
          return { kind: "tool_message", toolCallId: toolCall.id, content: refused!, through: this.#view.contiguous };
        }
        const { content, through } = this.#view.answer(call);
        return { kind: "tool_message", toolCallId: toolCall.id, call, content, through };
      }));
    }
  }

  async #start(
    toolCall: ModelToolCall,
    activation: Activation,
    traceparent: string | undefined,
  ): Promise<{ call?: number; refused?: string }> {
    if (toolCall.error) return { refused: formatOutcome({ status: "error", error: toolCall.error }) };
    const placed = this.#session.tools.find((candidate) => candidate.tool.name === toolCall.name);
    if (!placed) return { refused: formatOutcome(unknownTool(toolCall.name)) };
    const deadline = Number.isFinite(this.#toolDeadlineMs) ? Date.now() + this.#toolDeadlineMs : undefined;
    try {
      const handle = await this.#session.start(placed, toolCall.input, {
        activation,
        deadline,
        toolCallId: toolCall.id,
        ...(traceparent === undefined ? {} : { traceparent }),
      });
      return { call: handle.sequence };
    } catch (error) {
      if (!(error instanceof BrainError)) throw error;
      return { refused: formatOutcome({ status: "error", error: { code: error.code, message: error.message } }) };
    }
  }

  #settle(through: number, error: unknown, reply?: AssistantMessage): void {
    const settled = this.#waiters.filter((waiter) => waiter.sequence <= through);
    this.#waiters = this.#waiters.filter((waiter) => waiter.sequence > through);
    for (const waiter of settled) {
      if (reply) waiter.resolve(reply);
      else waiter.reject(error);
    }
  }
}

function unknownTool(name: string) {
  return {
    status: "error" as const,
    error: { code: "unknown_tool", message: `no tool named ${name} is placed in this session` },
  };
}
