import { z } from "zod";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { ModelMessage, ModelResult, ModelToolCall, NormalizedModelRequest } from "./types.ts";

/**
 * The chat-completions request Brain sends: a subset of the official
 * `ChatCompletionCreateParams` of `npm:openai` (a conformance test checks the
 * types against it).
 */
export interface WireRequest {
  model: string;
  messages: WireMessage[];
  tools?: WireTool[];
  response_format?: WireResponseFormat;
  max_completion_tokens?: number;
  temperature?: number;
  stream?: boolean;
  stream_options?: { include_usage: boolean };
}

/** One request message. */
export type WireMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: WireToolCallParam[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** A tool call the conversation already holds, sent back with the assistant message that made it. */
export interface WireToolCallParam {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A function tool: a Tool's name, description and input JSON Schema. */
export interface WireTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, JsonValue> };
}

/** The requested response shape. */
export type WireResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | { type: "json_schema"; json_schema: { name: string; schema: Record<string, JsonValue>; strict?: boolean } };

const usage = z.looseObject({ prompt_tokens: z.number().int(), completion_tokens: z.number().int() }).nullish();

/** A chat completion, as loosely as the official type allows: each tool call is checked on its own. */
export const wireResponse = z.looseObject({
  model: z.string().optional(),
  choices: z.array(z.looseObject({
    message: z.looseObject({
      content: z.string().nullish(),
      refusal: z.string().nullish(),
      tool_calls: z.array(z.unknown()).nullish(),
    }),
    finish_reason: z.string().nullish(),
  })).min(1),
  usage,
});

/** One streamed chunk (`chat.completion.chunk`). */
export const wireChunk = z.looseObject({
  model: z.string().optional(),
  choices: z.array(z.looseObject({
    delta: z.looseObject({
      content: z.string().nullish(),
      refusal: z.string().nullish(),
      tool_calls: z.array(z.looseObject({
        index: z.number().int(),
        id: z.string().nullish(),
        type: z.string().nullish(),
        function: z.looseObject({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
        custom: z.looseObject({ name: z.string().nullish(), input: z.string().nullish() }).nullish(),
      })).nullish(),
    }).nullish(),
    finish_reason: z.string().nullish(),
  })).optional(),
  usage,
});

/** An error body: `{ error: { message, code?, type?, param? } }`. */
export const wireError = z.looseObject({
  error: z.looseObject({
    message: z.string(),
    code: z.union([z.string(), z.number()]).nullish(),
    type: z.string().nullish(),
    param: z.string().nullish(),
  }),
});

/** The most characters of a provider's error message kept in a BrainError and its journaled outcome. */
export const MAX_ERROR_MESSAGE = 1000;

/**
 * A provider's `error` object that came with status 200, in a body or in an
 * event stream, as a `model_error`. `how` says where it came, as in `reported an error in the stream`.
 */
export function reportedError(name: string, error: z.infer<typeof wireError>["error"], how: string): BrainError {
  const message = error.message.slice(0, MAX_ERROR_MESSAGE);
  const { code } = error;
  return new BrainError("model_error", `provider ${name} ${how}: ${message}`, {
    details: { status: 200, retryable: false, message, ...(code === undefined || code === null ? {} : { code }) },
  });
}

/** The request body for one call. */
export function wireRequest(model: string, request: NormalizedModelRequest, stream: boolean): WireRequest {
  const messages: WireMessage[] = request.system === "" ? [] : [{ role: "system", content: request.system }];
  messages.push(...request.messages.map(wireMessage));
  const body: WireRequest = { model, messages };
  if (request.tools.length > 0) {
    body.tools = request.tools.map((spec) => ({
      type: "function",
      function: { name: spec.name, description: spec.description, parameters: withoutDialect(spec.inputSchema) },
    }));
  }
  const format = request.responseFormat;
  if (format) {
    body.response_format = format.type === "json_schema"
      ? {
        type: "json_schema",
        json_schema: {
          name: format.name,
          schema: withoutDialect(format.schema as Record<string, JsonValue>), // checked as JSON by the request schema
          ...(format.strict === undefined ? {} : { strict: format.strict }),
        },
      }
      : { type: format.type };
  }
  if (request.maxOutputTokens !== undefined) body.max_completion_tokens = request.maxOutputTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}

/** Providers reject or ignore the JSON Schema dialect marker zod adds, so it never leaves. */
function withoutDialect(schema: Record<string, JsonValue>): Record<string, JsonValue> {
  const { $schema: _, ...rest } = schema;
  return rest;
}

function wireMessage(message: ModelMessage): WireMessage {
  switch (message.role) {
    case "user":
      return { role: "user", content: message.content };
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
    case "assistant": {
      const toolCalls = message.toolCalls ?? [];
      if (toolCalls.length === 0) return { role: "assistant", content: message.content };
      return {
        role: "assistant",
        content: message.content === "" ? null : message.content,
        tool_calls: toolCalls.map((toolCall) => ({
          id: toolCall.id,
          type: "function",
          function: {
            name: toolCall.name,
            arguments: typeof toolCall.input === "string" && toolCall.error
              ? toolCall.input
              : JSON.stringify(toolCall.input),
          },
        })),
      };
    }
  }
}

/** A parsed chat completion as a ModelResult. */
export function fromWire(model: string, body: z.infer<typeof wireResponse>): ModelResult {
  const [choice] = body.choices;
  const result: ModelResult = {
    content: choice.message.content ?? "",
    toolCalls: (choice.message.tool_calls ?? []).map(fromWireToolCall),
    stopReason: choice.finish_reason ?? "stop",
    model: body.model ?? model,
  };
  if (choice.message.refusal) result.refusal = choice.message.refusal;
  if (body.usage) {
    result.usage = { inputTokens: body.usage.prompt_tokens, outputTokens: body.usage.completion_tokens };
  }
  return result;
}

/** A tool call as it comes back, function or custom, possibly malformed. */
export interface LooseToolCall {
  id?: unknown;
  type?: unknown;
  function?: { name?: unknown; arguments?: unknown } | null;
  custom?: { name?: unknown; input?: unknown } | null;
}

/**
 * One tool call of a response. A malformed call does not fail the response:
 * it becomes a call with an `invalid_tool_call` error for the model to read.
 */
export function fromWireToolCall(value: unknown, index: number): ModelToolCall {
  const wire: LooseToolCall = typeof value === "object" && value !== null ? value : {};
  const id = typeof wire.id === "string" && wire.id !== "" ? wire.id : `call_${index}`;
  const invalid = (name: string, input: JsonValue, message: string): ModelToolCall => ({
    id,
    name,
    input,
    error: { code: "invalid_tool_call", message },
  });
  if (wire.custom) {
    const name = typeof wire.custom.name === "string" ? wire.custom.name : "";
    const input = typeof wire.custom.input === "string" ? wire.custom.input : "";
    return invalid(name, input, `tool ${name} was called as a custom tool; call it as a function with JSON arguments`);
  }
  const name = wire.function?.name;
  if (typeof name !== "string" || name === "") {
    return invalid("", null, `tool call ${index} names no function; call a tool by its name`);
  }
  const raw = wire.function?.arguments;
  if (raw === undefined || raw === null || raw === "") return { id, name, input: {} };
  if (typeof raw === "object") return { id, name, input: raw as JsonValue };
  if (typeof raw !== "string") return invalid(name, null, `the arguments of tool ${name} are not a JSON object`);
  try {
    return { id, name, input: JSON.parse(raw) };
  } catch {
    return invalid(name, raw, `the arguments of tool ${name} are not JSON; send one JSON object`);
  }
}
