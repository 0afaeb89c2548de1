import type { JsonValue } from "../outcome/json.ts";

/** A tool call the model asked for. `input` is the parsed JSON arguments (the raw text when they were not JSON). */
export interface ModelToolCall {
  /** The provider's id for the call; a `tool` message answers it. */
  id: string;
  /** The Tool name. */
  name: string;
  /** The arguments. */
  input: JsonValue;
  /**
   * Why this call cannot run, when the provider's answer held a malformed call
   * (arguments that are not JSON, a custom tool call): the Agentloop answers it
   * with this error instead of starting a Tool. The rest of the response stands.
   */
  error?: ModelToolCallError;
}

/** What is wrong with one tool call of a response. */
export interface ModelToolCallError {
  /** Always `invalid_tool_call`. */
  code: "invalid_tool_call";
  /** What was wrong, for the model to read and correct. */
  message: string;
}

/** One message of a model conversation. */
export type ModelMessage =
  /** Text from the user (or an observation the Agentloop presents as user text). */
  | { role: "user"; content: string }
  /** A model reply, with the tool calls it asked for. */
  | { role: "assistant"; content: string; toolCalls?: ModelToolCall[] }
  /** The answer to one tool call. */
  | { role: "tool"; toolCallId: string; content: string };

/** A Tool as a model sees it: name, description and input JSON Schema. */
export interface ModelToolSpec {
  /** Name the model calls it by. */
  name: string;
  /** Model-facing description. */
  description: string;
  /** JSON Schema of accepted input. */
  inputSchema: Record<string, JsonValue>;
}

/** The shape the response must take. There is no default: omitted means the provider's plain text. */
export type ResponseFormat =
  /** Plain text. */
  | { type: "text" }
  /** Any JSON object. */
  | { type: "json_object" }
  /** JSON matching `schema`, a JSON Schema object (such as `z.toJSONSchema(...)`); it must be plain JSON. */
  | { type: "json_schema"; name: string; schema: Record<string, unknown>; strict?: boolean };

/**
 * One model request. Messages are explicit; an omitted `system` means an empty
 * prompt and omitted `tools` means no tools. Provider, model and credentials
 * are the session's and cannot be chosen here.
 *
 * @example
 * ```ts
 * import type { ModelRequest } from "@aexhq/brain";
 * const request: ModelRequest = {
 *   system: "Answer in one word.",
 *   messages: [{ role: "user", content: "Capital of France?" }],
 * };
 * ```
 */
export interface ModelRequest {
  /** The conversation, oldest first; at least one message. */
  messages: ModelMessage[];
  /** The system prompt; omitted means empty. */
  system?: string;
  /** Tools the model may call; omitted means none. */
  tools?: ModelToolSpec[];
  /** Required response shape; omitted means none. */
  responseFormat?: ResponseFormat;
  /** Upper bound on generated tokens. */
  maxOutputTokens?: number;
  /** Sampling temperature, 0 to 2. */
  temperature?: number;
}

/** A request after defaults: the empty prompt and no tools are explicit. */
export type NormalizedModelRequest = ModelRequest & { system: string; tools: ModelToolSpec[] };

/** Tokens a provider reports for one call. */
export interface ModelUsage {
  /** Prompt tokens. */
  inputTokens: number;
  /** Generated tokens. */
  outputTokens: number;
}

/**
 * A model response: its text, the tool calls it asked for, why it stopped, and
 * usage when the provider reports it.
 */
export interface ModelResult {
  /** The reply text; empty when the model only called tools. */
  content: string;
  /** Tool calls, in the order the model gave them. */
  toolCalls: ModelToolCall[];
  /** The provider's stop reason, such as `stop`, `tool_calls` or `length`. */
  stopReason: string;
  /** The model that answered, as the provider names it. */
  model: string;
  /** The model's refusal to answer, when it refused (OpenAI's `message.refusal`). */
  refusal?: string;
  /** Token usage, when reported. */
  usage?: ModelUsage;
}

/** The session's fixed model credentials. */
export interface ModelCredentials {
  /**
   * Sent as a bearer token by HTTP providers; undefined sends none, so `Deno.env.get("KEY")` fits as it is
   * (also under `exactOptionalPropertyTypes`).
   */
  apiKey?: string | undefined;
}

/** What a provider receives for one call. */
export interface ProviderCall {
  /** The session's model. */
  model: string;
  /** The request, with defaults applied. */
  request: NormalizedModelRequest;
  /** The session's credentials. */
  credentials: ModelCredentials;
  /** Aborted when the caller stops waiting; the provider should stop its request. */
  signal: AbortSignal;
  /**
   * Given only for the Agentloop's own turns: a streaming provider calls it with
   * each fragment of the reply's text as it arrives, and Brain journals them as
   * `assistant_delta` records. Tool `ctx.model` calls get none.
   */
  onDelta?: (text: string) => void;
}

/**
 * A model service. `complete` answers one request or throws a BrainError:
 * `model_error`, `protocol_error`, `connection_failed` (the request never left)
 * or `permission_denied` for a known failure, `timeout` when the provider gave
 * up waiting, `connection_lost` when the request may have been received and
 * the outcome is unknown.
 */
export interface ModelProvider {
  /** Provider name, recorded with each call. */
  readonly name: string;
  /** Answers one request. */
  complete(call: ProviderCall): Promise<ModelResult>;
}

/** A session's fixed model: provider, model name and credentials. */
export interface SessionModel {
  /** The provider every model call of the session uses. */
  provider: ModelProvider;
  /** The model name passed to the provider. */
  model: string;
  /** Credentials passed to the provider; never journaled. */
  credentials?: ModelCredentials;
}

/** Who made a model call: the session's Agentloop, or one Tool call (by name and call sequence). */
export type ModelCallOrigin = { kind: "agentloop" } | { kind: "tool"; tool: string; call: number };
