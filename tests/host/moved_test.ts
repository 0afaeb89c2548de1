import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type HostConnectionEvent, tool } from "../../mod.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { MOVED } from "../../src/host/protocol.ts";
import { hasCode } from "../_support/has_code.ts";

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
