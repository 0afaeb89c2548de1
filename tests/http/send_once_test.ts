import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, httpEnv, httpTool, tool } from "../../mod.ts";
import { extensionEnv } from "../../src/extension/extension_env.ts";
import { toolExtension } from "../../src/extension/extension.ts";
import { breakingKeepAlive } from "../_support/breaking_keepalive.ts";

// Each server answers only the first request of a connection and breaks any connection a
// client reuses, after reading the request: a client that resends on a fresh connection
// would make the server receive more requests than there were calls. Before each call the
// application's own fetch leaves an idle kept-alive connection to the same server.
const CALLS = 3;

async function warm(url: string): Promise<void> {
  await (await fetch(`${url}/warm`)).arrayBuffer();
}

Deno.test("an http() Tool call is sent once even when a kept-alive connection breaks after the request", async () => {
  await using server = breakingKeepAlive(() => Response.json({ done: true }));
  const post = httpTool({ name: "post", description: "POSTs.", input: z.object({ n: z.number() }), url: server.url });
  await using brain = new Brain({ allow: { net: [server.host] } });
  const session = await brain.sessions.create({ tools: [post()] });
  for (let n = 0; n < CALLS; n++) {
    await warm(server.url);
    const end = await session.call("post", { n }, { timeoutMs: 10_000 });
    assert.deepEqual(end.outcome, { status: "ok", value: { done: true } });
  }
  assert.equal(server.received.get("/"), CALLS);
});

Deno.test("an httpEnv http_json Tool call is sent once even when a kept-alive connection breaks after the request", async () => {
  await using server = breakingKeepAlive(() => Response.json({ done: true }));
  const post = tool({
    name: "post",
    description: "POSTs a comment.",
    input: z.object({ n: z.number() }),
    implementation: () => ({ type: "http_json", method: "POST", path: "/comments" }),
  });
  await using brain = new Brain({ allow: { net: [server.host] } });
  const env = httpEnv({ name: "api", baseUrl: server.url });
  const session = await brain.sessions.create({ tools: [post({ env })] });
  for (let n = 0; n < CALLS; n++) {
    await warm(server.url);
    const end = await session.call("post", { n }, { timeoutMs: 10_000 });
    assert.deepEqual(end.outcome, { status: "ok", value: { done: true } });
  }
  assert.equal(server.received.get("/comments"), CALLS);
});

Deno.test("an extensionEnv Tool call is sent once even when a kept-alive connection breaks after the request", async () => {
  const remote = tool({
    name: "remote",
    description: "Runs in the application.",
    input: z.object({ n: z.number() }),
    run: ({ n }, ctx) => ctx.finish({ n }),
  });
  const app = toolExtension({ tools: [remote()] });
  await using server = breakingKeepAlive((request) =>
    new URL(request.url).pathname === "/warm" ? Response.json({}) : app.fetch(request)
  );
  await using brain = new Brain({ allow: { net: [server.host] } });
  const env = extensionEnv({ name: "app", url: server.url });
  const session = await brain.sessions.create({ tools: [remote({ env })] });
  for (let n = 0; n < CALLS; n++) {
    await warm(server.url);
    const end = await session.call("remote", { n }, { timeoutMs: 10_000 });
    assert.deepEqual(end.outcome, { status: "ok", value: { n } });
  }
  assert.equal(server.received.get("/calls"), CALLS);
});
