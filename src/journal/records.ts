import type { JsonValue } from "../outcome/json.ts";
import type { Outcome } from "../outcome/outcome.ts";
import type {
  ModelCallOrigin,
  ModelToolCall,
  ModelToolSpec,
  ModelUsage,
  NormalizedModelRequest,
} from "../model/types.ts";

/** Why a Tool call ended: the first terminal cause, which later causes never replace. */
export type TerminalCause = "finish" | "error" | "timeout" | "cancelled" | "unknown";

/** The body of a journal record, before the journal gives it a sequence. */
export type RecordBody =
  /** Brain's intent to call a Tool, committed before dispatch. Its sequence names the call. */
  | {
    kind: "tool_call_started";
    tool: string;
    input: JsonValue;
    deadline?: number;
    activation: string;
    /** The model's id for the tool call, when the Agentloop started it. */
    toolCallId?: string;
  }
  /** An extension Event from `ctx.emit(event, data)`. */
  | { kind: "tool_event"; call: number; event: string; data: JsonValue }
  /** A validated result, optionally with model-facing `content`. */
  | { kind: "tool_result"; call: number; outcome: Outcome; content?: string }
  /** The Tool's synchronous phase ended; it may still emit and must still finish. */
  | { kind: "tool_returned"; call: number }
  /** The call's terminal record: its first terminal cause and final outcome. */
  | { kind: "tool_call_finished"; call: number; cause: TerminalCause; outcome: Outcome }
  /** A terminal cause, result or emission that arrived after the call had ended. */
  | { kind: "tool_call_late"; call: number; cause: string; outcome?: Outcome }
  /** A user message sent to the session's Agentloop. */
  | { kind: "user_message"; content: string }
  /** A model request, committed before the provider sees it. Its sequence names the model call. */
  | {
    kind: "model_call_started";
    origin: ModelCallOrigin;
    activation: string;
    provider: string;
    model: string;
    /** The whole request, as a Tool's `ctx.model` gave it. */
    request: NormalizedModelRequest;
  }
  /**
   * An Agentloop model request, committed before the provider sees it. It keeps
   * only what is new since the loop's previous request: the request is rebuilt
   * from the conversation records it refers to.
   */
  | {
    kind: "model_call_started";
    origin: ModelCallOrigin;
    activation: string;
    provider: string;
    model: string;
    conversation: ConversationRequest;
  }
  /**
   * How a model call ended, committed before its response returns: `ok` with the
   * response (without usage), `error`, `timeout`, or `unknown` when it was interrupted.
   */
  | { kind: "model_call_finished"; call: number; outcome: Outcome; usage?: ModelUsage }
  /**
   * A fragment of the reply text of an Agentloop model call, as a streaming
   * provider delivered it; committed before the call's `model_call_finished`.
   */
  | { kind: "assistant_delta"; modelCall: number; content: string }
  /** A model reply the Agentloop added to its conversation, with the model's refusal when it refused. */
  | { kind: "assistant_message"; modelCall: number; content: string; toolCalls: ModelToolCall[]; refusal?: string }
  /**
   * The Agentloop's answer to one tool call of an assistant message. `call` names
   * the Tool call, if one started; `through` is the last sequence the answer covers.
   */
  | { kind: "tool_message"; toolCallId: string; call?: number; content: string; through: number }
  /** Later observations of a background Tool call, as the Agentloop presented them, through sequence `through`. */
  | { kind: "observation_message"; call: number; content: string; through: number }
  /** Tool call `call` created an Environment with `ctx.environments.create`; `description` is its JSON description. */
  | { kind: "environment_created"; call: number; environment: string; description: JsonValue }
  /** Tool call `call` replaced a created Environment with `ctx.environments.update`. */
  | { kind: "environment_updated"; call: number; environment: string; description: JsonValue }
  /** Tool call `call` deleted a created Environment with `ctx.environments.delete`. */
  | { kind: "environment_deleted"; call: number; environment: string }
  /** Tool call `call` ran an Environment's setup with `ctx.environments.setup`; `outcome` is `ok` or `setup_failed`. */
  | { kind: "environment_setup"; call: number; environment: string; outcome: Outcome };

/**
 * How an Agentloop model request is journaled: by reference to the conversation
 * records (`user_message`, `assistant_message`, `tool_message`,
 * `observation_message`) it was built from, extending the loop's previous request.
 * Its messages are those records' messages in sequence order.
 */
export interface ConversationRequest {
  /** Sequence of the loop's previous `model_call_started` this request extends; absent on the first. */
  previous?: number;
  /** Sequences of the conversation records added since `previous`. */
  messages: number[];
  /** The system prompt, when it differs from the previous request's (always on the first). */
  system?: string;
  /** The tools, when they differ from the previous request's (always on the first). */
  tools?: ModelToolSpec[];
}

/** The kind of a journal record. */
export type RecordKind = RecordBody["kind"];

/** A committed journal record: its body plus session, dense sequence and commit time. */
export type JournalRecord = RecordBody & {
  /** The owning session. */
  sessionId: string;
  /** Dense, strictly increasing per session, starting at 1. */
  sequence: number;
  /** Commit time in milliseconds since the epoch. */
  at: number;
};

/** A Tool as a session advertises it: the contract reattachment must match. */
export interface AdvertisedTool {
  /** Tool name, unique in the session. */
  name: string;
  /** Model-facing description. */
  description: string;
  /** JSON Schema of what the input schema accepts (`io: "input"`). */
  inputSchema: Record<string, JsonValue>;
  /** JSON Schema of the parsed output, when the Tool declares one. */
  outputSchema?: Record<string, JsonValue>;
  /** Where the Tool runs: `host` (application function), `component`, `descriptor` or `http` (v1 endpoint). */
  implementation: "host" | "component" | "descriptor" | "http";
  /** The Environment binding name, when the placement names one. */
  env?: string;
  /**
   * Hex SHA-256 of the Component's bytes, for a Component a remote client uploaded:
   * reopening the session needs the same bytes.
   */
  sha256?: string;
}

/** What a journal keeps about a session besides its records. */
export interface SessionMeta {
  /** Session id. */
  id: string;
  /** Creation time in milliseconds since the epoch. */
  createdAt: number;
  /** The Tools placed in the session. */
  tools: AdvertisedTool[];
  /** The session's fixed provider and model names; credentials are never stored. */
  model?: { provider: string; model: string };
  /** The registered host identity; only a hash of its token is ever stored. */
  host?: { id: string; tokenHash: string };
}
