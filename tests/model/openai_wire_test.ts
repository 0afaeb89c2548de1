import assert from "node:assert/strict";
import type { z } from "zod";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
} from "openai/resources/chat/completions";
import { normalizeModelRequest } from "../../src/model/request.ts";
import {
  fromWire,
  type wireChunk,
  wireError,
  type WireRequest,
  wireRequest,
  wireResponse,
} from "../../src/model/openai_wire.ts";

/** Compiles only when `A` is assignable to `B`. */
type Assignable<A, B> = [A] extends [B] ? true : false;
/** A loose zod object's input without its `[key: string]: unknown` (which no interface satisfies), all the way down. */
type Known<T> = T extends readonly (infer U)[] ? Known<U>[]
  : T extends object ? { [K in keyof T as string extends K ? never : K]: Known<T[K]> }
  : T;

// What Brain sends is a valid request of the official SDK, streaming or not.
const sendsOfficialRequests: Assignable<WireRequest & { stream?: false }, ChatCompletionCreateParamsNonStreaming> =
  true;
const streamsOfficialRequests: Assignable<WireRequest & { stream: true }, ChatCompletionCreateParamsStreaming> = true;
// Everything the official SDK can receive is accepted by Brain's parsers.
const readsOfficialCompletions: Assignable<ChatCompletion, Known<z.input<typeof wireResponse>>> = true;
const readsOfficialChunks: Assignable<ChatCompletionChunk, Known<z.input<typeof wireChunk>>> = true;

Deno.test("the wire types conform to npm:openai's chat-completion types", () => {
  assert.deepEqual([sendsOfficialRequests, streamsOfficialRequests, readsOfficialCompletions, readsOfficialChunks], [
    true,
    true,
    true,
    true,
  ]);
});

Deno.test("a completion typed by npm:openai, with a refusal and both tool call kinds, parses into a ModelResult", () => {
  const completion: ChatCompletion = {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 0,
    model: "gpt-test",
    choices: [{
      index: 0,
      finish_reason: "tool_calls",
      logprobs: null,
      message: {
        role: "assistant",
        content: null,
        refusal: "partly refused",
        tool_calls: [
          { id: "call_f", type: "function", function: { name: "lookup", arguments: '{"id":"7"}' } },
          { id: "call_c", type: "custom", custom: { name: "grep", input: "needle" } },
        ],
      },
    }],
    usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
  };
  const result = fromWire("asked", wireResponse.parse(completion));
  assert.equal(result.refusal, "partly refused");
  assert.deepEqual(result.toolCalls.map(({ id, name, error }) => [id, name, error?.code]), [
    ["call_f", "lookup", undefined],
    ["call_c", "grep", "invalid_tool_call"],
  ]);
  assert.deepEqual(result.usage, { inputTokens: 3, outputTokens: 4 });
});

Deno.test("a request carries max_completion_tokens and tool parameters without $schema", () => {
  const body = wireRequest(
    "gpt-test",
    normalizeModelRequest({
      messages: [{ role: "user", content: "hi" }],
      tools: [{
        name: "lookup",
        description: "Look up one record.",
        inputSchema: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object" },
      }],
      maxOutputTokens: 9,
    }),
    false,
  );
  const official: ChatCompletionCreateParamsNonStreaming = body as WireRequest & { stream?: false };
  assert.equal(official.max_completion_tokens, 9);
  assert.equal("max_tokens" in official, false);
  assert.deepEqual(body.tools?.[0].function.parameters, { type: "object" });
  assert.ok(wireError.safeParse({ error: { message: "x", type: "t", param: null, code: null } }).success);
});
