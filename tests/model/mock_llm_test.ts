import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { createServer } from "@dwmkerr/mock-llm/dist/server.js";
import { getDefaultConfig } from "@dwmkerr/mock-llm/dist/config.js";
import { Brain, BrainError, openAICompatible } from "../../mod.ts";
import { ofKind } from "../_support/until.ts";

/**
 * `@dwmkerr/mock-llm`, a third-party OpenAI-compatible server, in this process
 * on 127.0.0.1: its default rule echoes the last user message; `error-401`
 * answers OpenAI's 401 body. `await using` stops it.
 */
async function mockLlm(): Promise<{ baseUrl: string; [Symbol.asyncDispose](): Promise<void> }> {
  const config = getDefaultConfig();
  config.streaming = { chunkSize: 4, chunkIntervalMs: 1 };
  config.rules.push({
    path: "/v1/chat/completions",
    method: "POST",
    match: "contains(body.messages[-1].content, 'error-401')",
    response: {
      status: 401,
      content: JSON.stringify({
        error: {
          message: "Incorrect API key provided.",
          type: "invalid_request_error",
          param: null,
          code: "invalid_api_key",
        },
      }),
    },
  });
  const app = createServer(config, "127.0.0.1", 0);
  const { promise: listening, resolve } = Promise.withResolvers<void>();
  const server = app.listen(0, "127.0.0.1", () => resolve());
  await listening;
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    [Symbol.asyncDispose]: () => {
      server.closeAllConnections();
      return new Promise((done) => server.close(() => done()));
    },
  };
}

Deno.test("mock-llm: a plain and a streamed Agentloop turn give the same echoed reply; the streamed one in deltas", async () => {
  await using mock = await mockLlm();
  for (const stream of [false, true]) {
    await using brain = new Brain();
    const session = await brain.sessions.create({
      model: { provider: openAICompatible({ baseUrl: mock.baseUrl, stream }), model: "gpt-4" },
    });
    const reply = await session.send("Hello from Brain");
    assert.equal(reply.content, "Hello from Brain");
    const deltas = ofKind(await session.read(), "assistant_delta");
    if (stream) assert.equal(deltas.map((delta) => delta.content).join(""), "Hello from Brain");
    else assert.deepEqual(deltas, []);
  }
});

Deno.test("mock-llm: OpenAI's 401 body keeps its error code, plain and streamed", async () => {
  await using mock = await mockLlm();
  for (const stream of [false, true]) {
    await using brain = new Brain();
    const session = await brain.sessions.create({
      model: { provider: openAICompatible({ baseUrl: mock.baseUrl, stream }), model: "gpt-4" },
    });
    const error = await session.send("error-401").catch((error: BrainError) => error);
    assert.ok(error instanceof BrainError);
    assert.equal(error.code, "model_error");
    assert.equal((error.details as { code: string }).code, "invalid_api_key");
    const [finished] = ofKind(await session.read(), "model_call_finished");
    assert.equal(finished.outcome.status, "error");
  }
});
