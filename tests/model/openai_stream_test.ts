import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, openAICompatible, tool } from "../../mod.ts";
import type { ModelRequest, ProviderCall } from "../../src/model/types.ts";
import { normalizeModelRequest } from "../../src/model/request.ts";
import { lookup } from "../../examples/lookup.ts";
import { ofKind, until } from "../_support/until.ts";
import { chatServer, chunk, usageChunk } from "./chat_server.ts";

function providerCall(request: unknown, onDelta?: (text: string) => void): ProviderCall {
  return {
    model: "test-model",
    request: normalizeModelRequest(request),
    credentials: {},
    signal: new AbortController().signal,
    ...(onDelta ? { onDelta } : {}),
  };
}

const hi: ModelRequest = { messages: [{ role: "user", content: "hi" }] };

Deno.test("a streamed completion asks for usage, passes each fragment on and assembles the same result", async () => {
  await using server = chatServer([{
    events: [
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Hel" }),
      chunk({ content: "lo!" }),
      chunk({}, "stop"),
      usageChunk(5, 2),
    ],
  }]);
  const provider = openAICompatible({ baseUrl: server.baseUrl, stream: true });
  const fragments: string[] = [];
  const result = await provider.complete(providerCall(hi, (text) => fragments.push(text)));
  assert.deepEqual(fragments, ["Hel", "lo!"]);
  assert.deepEqual(result, {
    content: "Hello!",
    toolCalls: [],
    stopReason: "stop",
    model: "test-model-2026",
    usage: { inputTokens: 5, outputTokens: 2 },
  });
  assert.equal(server.seen[0].body.stream, true);
  assert.deepEqual(server.seen[0].body.stream_options, { include_usage: true });
});

Deno.test("streamed tool calls are joined by index; a refusal streams into refusal", async () => {
  await using server = chatServer([
    {
      events: [
        chunk({
          role: "assistant",
          tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "lookup", arguments: "" } }],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"id":' } }] }),
        chunk({
          tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "lookup", arguments: "{bad" } }],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"7"}' } }] }),
        chunk({}, "tool_calls"),
      ],
    },
    { events: [chunk({ refusal: "I can't " }), chunk({ refusal: "help." }, "stop")] },
  ]);
  const provider = openAICompatible({ baseUrl: server.baseUrl, stream: true });
  const calls = await provider.complete(providerCall(hi));
  assert.equal(calls.stopReason, "tool_calls");
  assert.deepEqual(calls.toolCalls, [
    { id: "call_a", name: "lookup", input: { id: "7" } },
    {
      id: "call_b",
      name: "lookup",
      input: "{bad",
      error: { code: "invalid_tool_call", message: "the arguments of tool lookup are not JSON; send one JSON object" },
    },
  ]);
  const refused = await provider.complete(providerCall(hi));
  assert.equal(refused.refusal, "I can't help.");
  assert.equal(refused.content, "");
});

Deno.test("an error event is model_error; a stream cut before it finished is connection_lost", async () => {
  await using server = chatServer([
    { events: [chunk({ content: "par" }), { error: { message: "overloaded", code: "server_busy" } }] },
    { events: [chunk({ content: "part" })], cut: true },
    { events: ["{not json"] },
  ]);
  const provider = openAICompatible({ baseUrl: server.baseUrl, stream: true });
  const failed = await provider.complete(providerCall(hi)).catch((error: BrainError) => error);
  assert.ok(failed instanceof BrainError);
  assert.equal(failed.code, "model_error");
  assert.equal(failed.message, "provider openai-compatible reported an error in the stream: overloaded");
  assert.equal((failed.details as { code: string }).code, "server_busy");
  const cut = await provider.complete(providerCall(hi)).catch((error: BrainError) => error);
  assert.equal((cut as BrainError).code, "connection_lost");
  const garbled = await provider.complete(providerCall(hi)).catch((error: BrainError) => error);
  assert.equal((garbled as BrainError).code, "protocol_error");
});

Deno.test("the Agentloop's streamed turn is journaled as assistant deltas while the model still writes", async () => {
  const { promise: open, resolve: release } = Promise.withResolvers<void>();
  await using server = chatServer([
    {
      events: [
        chunk({
          tool_calls: [{
            index: 0,
            id: "call_1",
            type: "function",
            function: { name: "lookup", arguments: '{"id":"7"}' },
          }],
        }),
        chunk({}, "tool_calls"),
      ],
    },
    {
      events: [chunk({ content: "Customer 7 " }), chunk({ content: "is Ada" }), chunk({ content: "." }, "stop")],
      gate: { after: 1, open },
    },
  ]);
  await using brain = new Brain();
  const session = await brain.sessions.create({
    tools: [lookup({ prefix: "customer:" })],
    model: { provider: openAICompatible({ baseUrl: server.baseUrl, stream: true }), model: "m" },
  });
  const reply = session.send("Who is customer 7?");
  // The first fragment is committed while the server still holds the rest of the stream.
  const early = await until(session, (records) => ofKind(records, "assistant_delta").length > 0, "a delta");
  const [secondCall] = ofKind(early, "model_call_started").slice(1);
  assert.deepEqual(ofKind(early, "assistant_delta").map(({ modelCall, content }) => ({ modelCall, content })), [
    { modelCall: secondCall.sequence, content: "Customer 7 " },
  ]);
  assert.equal(ofKind(early, "model_call_finished").length, 1, "the streamed call has not finished yet");
  release();
  assert.equal((await reply).content, "Customer 7 is Ada.");
  const records = await session.read();
  const deltas = ofKind(records, "assistant_delta").filter((delta) => delta.modelCall === secondCall.sequence);
  assert.equal(deltas.map((delta) => delta.content).join(""), "Customer 7 is Ada.");
  const finished = ofKind(records, "model_call_finished").find((record) => record.call === secondCall.sequence)!;
  assert.ok(deltas.every((delta) => delta.sequence < finished.sequence), "every delta precedes the call's finish");
});

Deno.test("a Tool's ctx.model over a streaming provider journals no assistant deltas", async () => {
  await using server = chatServer([{ events: [chunk({ content: "sum" }), chunk({ content: "mary" }, "stop")] }]);
  const summarize = tool({
    name: "summarize",
    description: "Summarizes with the session's model.",
    input: z.object({}),
    run: async (_input, ctx) => ctx.finish((await ctx.model(hi)).content),
  });
  await using brain = new Brain();
  const session = await brain.sessions.create({
    tools: [summarize()],
    model: { provider: openAICompatible({ baseUrl: server.baseUrl, stream: true }), model: "m" },
  });
  const end = await session.call("summarize", {});
  assert.deepEqual(end.outcome, { status: "ok", value: "summary" });
  const records = await session.read();
  assert.equal(ofKind(records, "model_call_finished").length, 1);
  assert.deepEqual(ofKind(records, "assistant_delta"), []);
  assert.equal(server.seen[0].body.stream, true);
});

Deno.test("a model call that never left is journaled as an error with its cause, not unknown", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  await using brain = new Brain();
  const session = await brain.sessions.create({
    model: { provider: openAICompatible({ baseUrl: `http://127.0.0.1:${port}/v1` }), model: "m" },
  });
  const error = await session.send("hi").catch((error: BrainError) => error);
  assert.equal((error as BrainError).code, "connection_failed");
  const [finished] = ofKind(await session.read(), "model_call_finished");
  assert.equal(finished.outcome.status, "error");
  const failure = finished.outcome.status === "error" ? finished.outcome.error : undefined;
  assert.equal(failure?.code, "connection_failed");
  assert.equal(failure?.retryable, true);
  assert.match((failure?.details as { cause: string }).cause, /Connection refused/);
});
