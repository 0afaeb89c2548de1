import { z } from "zod";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { ModelMessage, ModelProvider, ModelResult, ModelToolCall, ProviderCall } from "./types.ts";

/** Options for {@linkcode openAICompatible}. */
export interface OpenAICompatibleOptions {
  /** The API base, such as `https://api.openai.com/v1/`; `chat/completions` is resolved against it. */
  baseUrl: string | URL;
  /** Provider name recorded with each call; `openai-compatible` by default. */
  name?: string;
  /** How long one request may take, headers and body; 60 seconds by default. */
  timeoutMs?: number;
  /** Extra request headers. */
  headers?: Record<string, string>;
}

const wireToolCall = z.object({
  id: z.string(),
  type: z.literal("function").optional(),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

const wireResponse = z.object({
  model: z.string().optional(),
  choices: z.array(z.object({
    message: z.object({
      content: z.string().nullish(),
      tool_calls: z.array(wireToolCall).nullish(),
    }),
    finish_reason: z.string().nullish(),
  })).min(1),
  usage: z.object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int() }).nullish(),
});

const wireError = z.object({ error: z.object({ message: z.string() }) });

/**
 * A provider for any server that speaks the OpenAI chat-completions protocol.
 * Tools become `function` tools with their input JSON Schema as `parameters`;
 * the session's `credentials.apiKey` is sent as a bearer token.
 *
 * Failures are BrainErrors: `model_error` for an HTTP error status (retryable
 * for 408, 409, 429 and 5xx), `protocol_error` for a body that is not a chat
 * completion, `timeout` after `timeoutMs`, `connection_lost` when the
 * connection fails after sending, so the outcome is unknown.
 *
 * @example
 * ```ts
 * import { openAICompatible } from "@aexhq/brain";
 * const provider = openAICompatible({ baseUrl: "http://127.0.0.1:8080/v1/" });
 * console.log(provider.name); // "openai-compatible"
 * ```
 */
export function openAICompatible(options: OpenAICompatibleOptions): ModelProvider {
  const { name = "openai-compatible", timeoutMs = 60_000, headers = {} } = options;
  const base = new URL(options.baseUrl);
  if (!base.pathname.endsWith("/")) base.pathname += "/";
  const endpoint = new URL("chat/completions", base);
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new BrainError("invalid_argument", `timeoutMs must be a positive number, got ${timeoutMs}`);
  }
  return Object.freeze({
    name,
    complete: (call: ProviderCall) => complete(name, endpoint, timeoutMs, headers, call),
  });
}

async function complete(
  name: string,
  endpoint: URL,
  timeoutMs: number,
  extraHeaders: Record<string, string>,
  { model, request, credentials, signal }: ProviderCall,
): Promise<ModelResult> {
  const timedOut = new BrainError("timeout", `provider ${name} did not answer within ${timeoutMs} ms`);
  const stop = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
  const headers: Record<string, string> = { ...extraHeaders, "content-type": "application/json" };
  if (credentials.apiKey !== undefined) headers.authorization = `Bearer ${credentials.apiKey}`;
  const failure = (error: unknown): never => {
    if (signal.aborted) throw signal.reason;
    if (stop.aborted) throw timedOut;
    if (error instanceof BrainError) throw error;
    throw new BrainError("connection_lost", `provider ${name}: the connection failed after sending: ${error}`, {
      cause: error,
    });
  };
  let response: Response;
  try {
    response = await fetch(endpoint, {
      method: "POST",
      headers,
      body: JSON.stringify(wireRequest(model, request)),
      signal: stop,
    });
  } catch (error) {
    return failure(error);
  }
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    return failure(error);
  }
  if (!response.ok) throw httpError(name, response.status, text);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new BrainError("protocol_error", `provider ${name} answered with a body that is not JSON`);
  }
  const parsed = wireResponse.safeParse(body);
  if (!parsed.success) {
    throw new BrainError(
      "protocol_error",
      `provider ${name} answered with no chat completion: ${z.prettifyError(parsed.error)}`,
    );
  }
  return fromWire(model, parsed.data);
}

function wireRequest(model: string, request: ProviderCall["request"]): Record<string, JsonValue> {
  const messages: JsonValue[] = request.system === "" ? [] : [{ role: "system", content: request.system }];
  messages.push(...request.messages.map(wireMessage));
  const body: Record<string, JsonValue> = { model, messages };
  if (request.tools.length > 0) {
    body.tools = request.tools.map((spec) => ({
      type: "function",
      function: { name: spec.name, description: spec.description, parameters: spec.inputSchema },
    }));
  }
  const format = request.responseFormat;
  if (format) {
    body.response_format = format.type === "json_schema"
      ? {
        type: "json_schema",
        json_schema: {
          name: format.name,
          schema: format.schema as Record<string, JsonValue>, // checked as JSON by the request schema
          ...(format.strict === undefined ? {} : { strict: format.strict }),
        },
      }
      : { type: format.type };
  }
  if (request.maxOutputTokens !== undefined) body.max_tokens = request.maxOutputTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  return body;
}

function wireMessage(message: ModelMessage): JsonValue {
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
          function: { name: toolCall.name, arguments: JSON.stringify(toolCall.input) },
        })),
      };
    }
  }
}

function fromWire(model: string, body: z.infer<typeof wireResponse>): ModelResult {
  const [choice] = body.choices;
  const result: ModelResult = {
    content: choice.message.content ?? "",
    toolCalls: (choice.message.tool_calls ?? []).map(fromWireToolCall),
    stopReason: choice.finish_reason ?? "stop",
    model: body.model ?? model,
  };
  if (body.usage) {
    result.usage = { inputTokens: body.usage.prompt_tokens, outputTokens: body.usage.completion_tokens };
  }
  return result;
}

function fromWireToolCall(wire: z.infer<typeof wireToolCall>): ModelToolCall {
  let input: JsonValue;
  try {
    input = JSON.parse(wire.function.arguments);
  } catch {
    input = wire.function.arguments;
  }
  return { id: wire.id, name: wire.function.name, input };
}

function httpError(name: string, status: number, text: string): BrainError {
  let detail = text.slice(0, 500);
  try {
    const parsed = wireError.safeParse(JSON.parse(text));
    if (parsed.success) detail = parsed.data.error.message;
  } catch {
    // not JSON: keep the text
  }
  const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
  return new BrainError("model_error", `provider ${name} answered ${status}: ${detail}`, {
    details: { status, retryable, message: detail },
  });
}
