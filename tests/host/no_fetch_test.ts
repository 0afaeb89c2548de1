import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { serveBrain } from "../../src/host/server/server.ts";

const echo = tool({
  name: "echo",
  description: "Echoes its text after an event.",
  input: z.object({ text: z.string() }),
  run: async ({ text }, ctx) => (await ctx.emit("seen", text), ctx.finish(text)),
});

Deno.test("a remote client sends nothing through fetch, which may resend a POST on a broken keep-alive connection", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  const fetched: string[] = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = (input: URL | RequestInfo) => {
    fetched.push(String(input instanceof Request ? input.url : input));
    return Promise.reject(new TypeError("the remote client must not fetch"));
  };
  const brain = new Brain({ url: server.url, serverToken: "operator-secret", token: "no-fetch-token" });
  try {
    const session = await brain.sessions.create({ tools: [echo()] });
    assert.deepEqual((await session.call("echo", { text: "hi" })).outcome, { status: "ok", value: "hi" });
    const started = await session.start("echo", { text: "again" });
    assert.equal((await started.ended).cause, "finish");
    assert.equal((await session.read()).filter((record) => record.kind === "tool_call_finished").length, 2);
    assert.deepEqual((await brain.sessions.list()).map((meta) => meta.id), [session.id]);
    await session.end();
  } finally {
    globalThis.fetch = realFetch;
    await brain.close();
    await server.shutdown();
  }
  assert.deepEqual(fetched, []);
});
