import assert from "node:assert/strict";
import { BrainError } from "../../mod.ts";
import type { ProviderCall } from "../../src/model/types.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { checkModelResult, normalizeModelRequest } from "../../src/model/request.ts";
import { hasCode } from "../_support/has_code.ts";

Deno.test("an omitted system prompt becomes empty and omitted tools become none; the response format has no default", () => {
  const normalized = normalizeModelRequest({ messages: [{ role: "user", content: "hi" }] });
  assert.deepEqual(normalized, { messages: [{ role: "user", content: "hi" }], system: "", tools: [] });
  assert.equal("responseFormat" in normalized, false);
});

Deno.test("a model request may not choose the model, and needs explicit messages", () => {
  for (
    const bad of [
      { messages: [{ role: "user", content: "hi" }], model: "gpt-other" },
      { messages: [] },
      {},
      { messages: [{ role: "system", content: "x" }] },
      { messages: [{ role: "user", content: "hi" }], temperature: 3 },
      { messages: [{ role: "assistant", content: "", toolCalls: [{ id: "a", name: "t", input: 1n }] }] },
    ]
  ) {
    assert.throws(
      () => normalizeModelRequest(bad),
      hasCode("invalid_argument"),
    );
  }
});

Deno.test("a malformed provider result is a protocol_error naming the provider", () => {
  assert.throws(() => checkModelResult({ content: 1 }, "acme"), { code: "protocol_error", message: /acme/ });
});

function call(content: string): ProviderCall {
  return {
    model: "m",
    request: normalizeModelRequest({ messages: [{ role: "user", content }] }),
    credentials: {},
    signal: new AbortController().signal,
  };
}

Deno.test("ScriptedProvider answers step by step, records calls, and fails when the script is used up", async () => {
  const provider = new ScriptedProvider([
    "first",
    { toolCalls: [{ name: "lookup", input: { id: "7" } }] },
    (received) => `echo ${(received.request.messages[0] as { content: string }).content}`,
    new BrainError("model_error", "scripted failure"),
  ]);
  const first = await provider.complete(call("a"));
  assert.equal(first.content, "first");
  assert.equal(first.stopReason, "stop");
  assert.ok(first.usage!.inputTokens > 0);
  const second = await provider.complete(call("b"));
  assert.deepEqual(second.toolCalls, [{ id: "call_2_1", name: "lookup", input: { id: "7" } }]);
  assert.equal(second.stopReason, "tool_calls");
  assert.equal((await provider.complete(call("c"))).content, "echo c");
  await assert.rejects(provider.complete(call("d")), { code: "model_error", message: "scripted failure" });
  await assert.rejects(provider.complete(call("e")), { code: "model_error", message: /no step for call 5/ });
  assert.equal(provider.calls.length, 5);
  assert.equal(provider.remaining, 0);
});
