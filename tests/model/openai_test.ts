import assert from "node:assert/strict";
import { BrainError, openAICompatible, type ProviderCall } from "../../mod.ts";
import { normalizeModelRequest } from "../../src/model/request.ts";
import { chatServer, completion } from "./chat_server.ts";

function providerCall(request: unknown, signal = new AbortController().signal): ProviderCall {
  return { model: "test-model", request: normalizeModelRequest(request), credentials: { apiKey: "sk-test" }, signal };
}

async function rejection(promise: Promise<unknown>): Promise<BrainError> {
  const error = await promise.then(() => undefined, (error) => error);
  assert.ok(error instanceof BrainError, `expected a BrainError, got ${error}`);
  return error;
}

Deno.test("openAICompatible sends model, bearer credentials and messages, and omits an empty prompt, tools and format", async () => {
  await using server = chatServer([{ reply: completion({ content: "Paris." }) }]);
  const provider = openAICompatible({ baseUrl: server.baseUrl });
  const result = await provider.complete(providerCall({ messages: [{ role: "user", content: "Capital of France?" }] }));
  assert.deepEqual(result, {
    content: "Paris.",
    toolCalls: [],
    stopReason: "stop",
    model: "test-model-2026",
    usage: { inputTokens: 11, outputTokens: 7 },
  });
  const [seen] = server.seen;
  assert.equal(seen.authorization, "Bearer sk-test");
  assert.deepEqual(seen.body, { model: "test-model", messages: [{ role: "user", content: "Capital of France?" }] });
});

Deno.test("openAICompatible advertises tools with their input JSON Schema and parses tool calls", async () => {
  await using server = chatServer([{
    reply: completion({
      content: null,
      tool_calls: [
        { id: "call_a", type: "function", function: { name: "lookup", arguments: '{"id":"7"}' } },
        { id: "call_b", type: "function", function: { name: "lookup", arguments: "{not json" } },
      ],
    }, { finish_reason: "tool_calls" }),
  }]);
  const provider = openAICompatible({ baseUrl: server.baseUrl });
  const schema = { type: "object", properties: { id: { type: "string" } }, required: ["id"] };
  const dialect = { $schema: "https://json-schema.org/draft/2020-12/schema" };
  const result = await provider.complete(providerCall({
    system: "Be brief.",
    messages: [
      { role: "user", content: "Who is 7?" },
      { role: "assistant", content: "", toolCalls: [{ id: "call_0", name: "lookup", input: { id: "6" } }] },
      { role: "tool", toolCallId: "call_0", content: "null" },
    ],
    tools: [{ name: "lookup", description: "Look up one record.", inputSchema: { ...dialect, ...schema } }],
    responseFormat: { type: "json_schema", name: "answer", schema: { ...dialect, type: "object" }, strict: true },
    maxOutputTokens: 50,
    temperature: 0,
  }));
  assert.deepEqual(result.toolCalls, [
    { id: "call_a", name: "lookup", input: { id: "7" } },
    {
      id: "call_b",
      name: "lookup",
      input: "{not json",
      error: { code: "invalid_tool_call", message: "the arguments of tool lookup are not JSON; send one JSON object" },
    },
  ]);
  assert.equal(result.stopReason, "tool_calls");
  assert.equal(result.content, "");
  assert.deepEqual(server.seen[0].body, {
    model: "test-model",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Who is 7?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_0", type: "function", function: { name: "lookup", arguments: '{"id":"6"}' } }],
      },
      { role: "tool", tool_call_id: "call_0", content: "null" },
    ],
    tools: [{ type: "function", function: { name: "lookup", description: "Look up one record.", parameters: schema } }],
    response_format: { type: "json_schema", json_schema: { name: "answer", schema: { type: "object" }, strict: true } },
    max_completion_tokens: 50,
    temperature: 0,
  });
});

Deno.test("openAICompatible turns HTTP errors into model_error with status, message and retryability", async () => {
  await using server = chatServer([
    { status: 429, body: JSON.stringify({ error: { message: "rate limited", type: "rate_limit" } }) },
    { status: 400, body: JSON.stringify({ error: { message: "bad request: messages" } }) },
    { status: 502, body: "<html>bad gateway</html>" },
  ]);
  const provider = openAICompatible({ baseUrl: server.baseUrl });
  const request = { messages: [{ role: "user", content: "hi" }] };
  const limited = await rejection(provider.complete(providerCall(request)));
  assert.equal(limited.code, "model_error");
  assert.deepEqual(limited.details, { status: 429, retryable: true, message: "rate limited", type: "rate_limit" });
  const bad = await rejection(provider.complete(providerCall(request)));
  assert.deepEqual(bad.details, { status: 400, retryable: false, message: "bad request: messages" });
  const gateway = await rejection(provider.complete(providerCall(request)));
  assert.deepEqual(gateway.details, { status: 502, retryable: true, message: "<html>bad gateway</html>" });
});

Deno.test("openAICompatible rejects a 200 answer that is not a chat completion as protocol_error", async () => {
  await using server = chatServer([{ reply: { choices: [] } }, { status: 200, body: "not json" }]);
  const provider = openAICompatible({ baseUrl: server.baseUrl });
  const request = { messages: [{ role: "user", content: "hi" }] };
  assert.equal((await rejection(provider.complete(providerCall(request)))).code, "protocol_error");
  assert.equal((await rejection(provider.complete(providerCall(request)))).code, "protocol_error");
});

Deno.test("openAICompatible gives up after timeoutMs with a timeout error", async () => {
  await using server = chatServer([{ hang: true }]);
  const provider = openAICompatible({ baseUrl: server.baseUrl, timeoutMs: 50 });
  const error = await rejection(provider.complete(providerCall({ messages: [{ role: "user", content: "hi" }] })));
  assert.equal(error.code, "timeout");
  assert.equal(server.seen.length, 1);
});

Deno.test("openAICompatible reports a connection dropped mid-response as connection_lost", async () => {
  await using server = chatServer([{ drop: true }]);
  const provider = openAICompatible({ baseUrl: server.baseUrl });
  const error = await rejection(provider.complete(providerCall({ messages: [{ role: "user", content: "hi" }] })));
  assert.equal(error.code, "connection_lost");
});

Deno.test("openAICompatible stops a pending request when the caller aborts, rejecting with the caller's reason", async () => {
  await using server = chatServer([{ hang: true }]);
  const provider = openAICompatible({ baseUrl: server.baseUrl });
  const controller = new AbortController();
  const pending = provider.complete(providerCall({ messages: [{ role: "user", content: "hi" }] }, controller.signal));
  await server.hanging;
  const reason = new BrainError("cancelled", "stop");
  controller.abort(reason);
  assert.equal(await pending.catch((error) => error), reason);
});

Deno.test("openAICompatible refuses a non-positive timeout", () => {
  assert.throws(() => openAICompatible({ baseUrl: "http://127.0.0.1:1/", timeoutMs: 0 }), { code: "invalid_argument" });
});

Deno.test("openAICompatible keeps the provider's error.code, type and Retry-After in the error details", async () => {
  const later = new Date(Date.now() + 60_000).toUTCString();
  await using server = chatServer([
    {
      status: 429,
      body: JSON.stringify({ error: { message: "slow down", type: "requests", code: "rate_limit_exceeded" } }),
      headers: { "retry-after": "7" },
    },
    {
      status: 503,
      body: JSON.stringify({ error: { message: "busy", code: 503 } }),
      headers: { "retry-after-ms": "250" },
    },
    { status: 429, body: "{}", headers: { "retry-after": later } },
  ]);
  const provider = openAICompatible({ baseUrl: server.baseUrl });
  const request = { messages: [{ role: "user", content: "hi" }] };
  const limited = await rejection(provider.complete(providerCall(request)));
  assert.equal(limited.code, "model_error");
  assert.equal(limited.message, "provider openai-compatible answered 429 (rate_limit_exceeded): slow down");
  assert.deepEqual(limited.details, {
    status: 429,
    retryable: true,
    message: "slow down",
    code: "rate_limit_exceeded",
    type: "requests",
    retryAfterMs: 7000,
  });
  const busy = await rejection(provider.complete(providerCall(request)));
  assert.deepEqual(busy.details, { status: 503, retryable: true, message: "busy", code: 503, retryAfterMs: 250 });
  const dated = (await rejection(provider.complete(providerCall(request)))).details as { retryAfterMs: number };
  assert.ok(dated.retryAfterMs > 50_000 && dated.retryAfterMs <= 60_000, `${dated.retryAfterMs}`);
});

Deno.test("openAICompatible surfaces a refusal", async () => {
  await using server = chatServer([{ reply: completion({ content: null, refusal: "I can't help with that." }) }]);
  const provider = openAICompatible({ baseUrl: server.baseUrl });
  const result = await provider.complete(providerCall({ messages: [{ role: "user", content: "something bad" }] }));
  assert.equal(result.refusal, "I can't help with that.");
  assert.equal(result.content, "");
});

Deno.test("openAICompatible keeps good tool calls and gives each malformed one its own invalid_tool_call", async () => {
  await using server = chatServer([{
    reply: completion({
      content: null,
      tool_calls: [
        { id: "call_obj", type: "function", function: { name: "lookup", arguments: { id: "7" } } },
        { id: "call_custom", type: "custom", custom: { name: "lookup", input: "id 7" } },
        { id: "call_anon", type: "function", function: { arguments: "{}" } },
        { id: "call_none", type: "function", function: { name: "list" } },
        "not a tool call",
      ],
    }, { finish_reason: "tool_calls" }),
  }]);
  const provider = openAICompatible({ baseUrl: server.baseUrl });
  const result = await provider.complete(providerCall({ messages: [{ role: "user", content: "go" }] }));
  assert.deepEqual(result.toolCalls, [
    { id: "call_obj", name: "lookup", input: { id: "7" } },
    {
      id: "call_custom",
      name: "lookup",
      input: "id 7",
      error: {
        code: "invalid_tool_call",
        message: "tool lookup was called as a custom tool; call it as a function with JSON arguments",
      },
    },
    {
      id: "call_anon",
      name: "",
      input: null,
      error: { code: "invalid_tool_call", message: "tool call 2 names no function; call a tool by its name" },
    },
    { id: "call_none", name: "list", input: {} },
    {
      id: "call_4",
      name: "",
      input: null,
      error: { code: "invalid_tool_call", message: "tool call 4 names no function; call a tool by its name" },
    },
  ]);
});

Deno.test("openAICompatible reports a refused connection as connection_failed with its cause, never sent", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  const provider = openAICompatible({ baseUrl: `http://127.0.0.1:${port}/v1` });
  const error = await rejection(provider.complete(providerCall({ messages: [{ role: "user", content: "hi" }] })));
  assert.equal(error.code, "connection_failed");
  assert.match(
    error.message,
    new RegExp(`^provider openai-compatible could not connect to http://127.0.0.1:${port}: `),
  );
  const details = error.details as { retryable: boolean; cause: string };
  assert.equal(details.retryable, true);
  assert.match(details.cause, /Connection refused/);
  assert.ok(error.cause instanceof TypeError);
});

Deno.test("openAICompatible reports a port fetch blocks as connection_failed", async () => {
  const provider = openAICompatible({ baseUrl: "http://127.0.0.1:1/v1" });
  const error = await rejection(provider.complete(providerCall({ messages: [{ role: "user", content: "hi" }] })));
  assert.equal(error.code, "connection_failed");
  assert.match((error.details as { cause: string }).cause, /port 1 are blocked/);
});

const otherHost = "127.0.0.2:8080";
Deno.test({
  name: "openAICompatible without --allow-net for the provider is permission_denied, naming the flag",
  ignore: Deno.permissions.querySync({ name: "net", host: otherHost }).state === "granted",
  fn: async () => {
    const provider = openAICompatible({ baseUrl: `http://${otherHost}/v1` });
    const error = await rejection(provider.complete(providerCall({ messages: [{ role: "user", content: "hi" }] })));
    assert.equal(error.code, "permission_denied");
    assert.equal(
      error.message,
      `provider openai-compatible may not reach ${otherHost}: run with --allow-net=${otherHost}`,
    );
    assert.ok(error.cause instanceof Deno.errors.NotCapable);
  },
});
