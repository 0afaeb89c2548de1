import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BRAIN_MAX_MODEL_CALLS, type HostConnectionEvent, tool } from "../../mod.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { MOVED } from "../../src/host/protocol.ts";
import { hasCode } from "../_support/has_code.ts";
import { scratchDir } from "../_support/scratch.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { withDeadline } from "../_support/deadline.ts";

const quick = tool({
  name: "quick",
  description: "Finishes at once.",
  input: z.object({}),
  run: (_input, ctx) => ctx.finish("quick"),
});

/** A WebSocket endpoint that closes every host socket at once as `moved`, with `reason`. */
function mover(reason: string): { url: string } & AsyncDisposable {
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.onopen = () => socket.close(MOVED, reason);
    return response;
  });
  return { url: `http://127.0.0.1:${http.addr.port}`, [Symbol.asyncDispose]: () => http.shutdown() };
}

Deno.test("a host sent elsewhere by a moved close connects to the URL it names, and its requests run there", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  try {
    await using elsewhere = mover(server.url);
    const events: HostConnectionEvent[] = [];
    await using brain = new Brain({
      url: elsewhere.url,
      token: "moved-token",
      host: "app",
      serverToken: "operator-secret",
      onConnection: (event) => events.push(event),
    });
    const session = await brain.sessions.create({ tools: [quick()] });
    assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
    assert.deepEqual(events.map(({ type, url, to }) => ({ type, url, to })), [
      { type: "moved", url: elsewhere.url, to: server.url },
      { type: "attached", url: server.url, to: undefined },
    ]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("a moved close that names no server's URL is not followed: the attempt failed", async () => {
  await using elsewhere = mover("file:///etc/passwd");
  const events: HostConnectionEvent[] = [];
  await using brain = new Brain({
    url: elsewhere.url,
    token: "moved-token",
    host: "app",
    onConnection: (event) => events.push(event),
  });
  await assert.rejects(brain.sessions.list(), hasCode("connection_lost"));
  assert.equal(events[0].type, "failed");
  assert.ok(events.every((event) => event.type !== "moved" && event.url === elsewhere.url));
});

Deno.test("a handle reopened on another server of the cluster takes that server's budgets for its next activations", async () => {
  const path = `${scratchDir("moved_test")}/brain.kv`;
  const first = await serveBrain({ serverToken: "operator-secret", path, maxEmittedBytes: 1_000 });
  await using second = await servedBrain({
    serverToken: "operator-secret",
    path,
    maxEmittedBytes: 2_000,
    maxModelCalls: 3,
  });
  const attached = Promise.withResolvers<HostConnectionEvent>();
  await using brain = new Brain({
    url: first.url,
    cluster: [second.url],
    token: "moved-token",
    host: "app",
    serverToken: "operator-secret",
    onConnection: (event) => event.type === "attached" && event.url === second.url && attached.resolve(event),
  });
  const session = await brain.sessions.create({ tools: [quick()] });
  const before = session.activation();
  assert.deepEqual([before.maxEmittedBytes, before.maxModelCalls], [1_000, BRAIN_MAX_MODEL_CALLS]);
  await first.shutdown();
  await withDeadline(attached.promise, "the attach to the second server");
  const after = session.activation();
  assert.deepEqual([after.maxEmittedBytes, after.maxModelCalls], [2_000, 3]);
  assert.deepEqual((await session.call("quick", {}, { activation: after })).outcome, { status: "ok", value: "quick" });
  assert.equal(before.maxEmittedBytes, 1_000, "an activation keeps the budgets it was made with");
});
