import { z } from "zod";
import { BrainError } from "../outcome/errors.ts";
import { issuesJson } from "../outcome/issues.ts";
import { findNonJson, frozenJson, type JsonValue } from "../outcome/json.ts";
import type { ModelRequest, ModelResult, NormalizedModelRequest } from "./types.ts";
import { deepFreeze } from "../util/freeze.ts";

const json = z.custom<JsonValue>((value) => findNonJson(value) === undefined, { message: "not a JSON value" });
const jsonObject = z.record(z.string(), json);

const toolCall = z.strictObject({
  id: z.string().min(1),
  name: z.string(),
  input: json,
  error: z.strictObject({ code: z.literal("invalid_tool_call"), message: z.string() }).optional(),
});

const message = z.discriminatedUnion("role", [
  z.strictObject({ role: z.literal("user"), content: z.string() }),
  z.strictObject({ role: z.literal("assistant"), content: z.string(), toolCalls: z.array(toolCall).optional() }),
  z.strictObject({ role: z.literal("tool"), toolCallId: z.string().min(1), content: z.string() }),
]);

const responseFormat = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("text") }),
  z.strictObject({ type: z.literal("json_object") }),
  z.strictObject({
    type: z.literal("json_schema"),
    name: z.string().min(1),
    schema: jsonObject,
    strict: z.boolean().optional(),
  }),
]);

const request = z.strictObject({
  messages: z.array(message).min(1),
  system: z.string().optional(),
  tools: z.array(z.strictObject({ name: z.string().min(1), description: z.string(), inputSchema: jsonObject }))
    .optional(),
  responseFormat: responseFormat.optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
});

/**
 * Tool calls one model reply may ask for: a reply asking for more is a
 * `protocol_error`, and none of them runs (a model that loops could otherwise
 * start thousands of calls at once).
 */
export const MAX_TOOL_CALLS_PER_RESULT = 256;

const result = z.strictObject({
  content: z.string(),
  toolCalls: z.array(toolCall).max(MAX_TOOL_CALLS_PER_RESULT),
  stopReason: z.string(),
  model: z.string(),
  refusal: z.string().optional(),
  usage: z.strictObject({ inputTokens: z.number().int().nonnegative(), outputTokens: z.number().int().nonnegative() })
    .optional(),
});

/**
 * Checks a model request and applies its defaults: an omitted system prompt
 * becomes empty and omitted tools become none. Throws `invalid_argument`,
 * also for fields a request may not set, such as the model.
 */
export function normalizeModelRequest(value: unknown): NormalizedModelRequest {
  // A request is JSON: checked on a copy, so no getter or Proxy of the caller's runs in the check or after it.
  const copy = frozenJson(value);
  if (copy === undefined) {
    throw new BrainError("invalid_argument", `invalid model request: not JSON: ${findNonJson(value) ?? "$ changed"}`);
  }
  const parsed = request.safeParse(copy);
  if (!parsed.success) {
    throw new BrainError("invalid_argument", `invalid model request: ${z.prettifyError(parsed.error)}`, {
      details: issuesJson(parsed.error),
    });
  }
  const checked: ModelRequest = parsed.data;
  return { ...checked, system: checked.system ?? "", tools: checked.tools ?? [] };
}

/**
 * Checks what a provider returned, and answers it deep-frozen; a malformed
 * result, or one naming a tool call id twice, is a `protocol_error`.
 */
export function checkModelResult(value: unknown, provider: string): ModelResult {
  const copy = frozenJson(value);
  if (copy === undefined) {
    throw new BrainError("protocol_error", `provider ${provider} returned a result that is not JSON`);
  }
  const parsed = result.safeParse(copy);
  if (!parsed.success) {
    throw new BrainError(
      "protocol_error",
      `provider ${provider} returned a malformed result: ${z.prettifyError(parsed.error)}`,
      {
        details: issuesJson(parsed.error),
      },
    );
  }
  const ids = new Set<string>();
  for (const { id } of parsed.data.toolCalls) {
    // Each tool message answers one id: a repeated id could never be answered unambiguously.
    if (ids.has(id)) {
      throw new BrainError(
        "protocol_error",
        `provider ${provider} returned two tool calls with the id ${JSON.stringify(id.slice(0, 200))}`,
      );
    }
    ids.add(id);
  }
  return deepFreeze(parsed.data);
}
