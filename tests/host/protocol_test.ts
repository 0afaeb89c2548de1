import assert from "node:assert/strict";
import { Brain, type BrainError, serveBrain } from "../../mod.ts";
import { rawHost } from "./raw_host.ts";

Deno.test("a host cannot report on a call it was not sent, nor start on a handle it does not hold", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  const raw = await rawHost(server.url, "raw", "raw-token");
  try {
    raw.socket.send(JSON.stringify({ id: 1, op: "attach", handles: [] }));
    assert.deepEqual(await raw.next(), { t: "reply", id: 1, value: { failed: [] } });
    raw.socket.send(JSON.stringify({ id: 2, op: "emit", session: "s", call: 1, event: "e", data: null }));
    assert.deepEqual((await raw.next() as { error: { code: string } }).error.code, "call_not_found");
    raw.socket.send(JSON.stringify({ id: 3, op: "start", handle: "nope", tool: "t", input: {} }));
    assert.deepEqual((await raw.next() as { error: { code: string } }).error.code, "session_closed");
  } finally {
    raw.socket.close();
    await raw.closed;
    await server.shutdown();
  }
});

Deno.test("a malformed frame closes the host socket with a protocol error", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  const raw = await rawHost(server.url, "raw", "raw-token");
  try {
    raw.socket.send(JSON.stringify({ id: 1, op: "launch_missiles" }));
    const closed = await raw.closed;
    assert.deepEqual([closed.code, closed.reason], [4002, "protocol error"]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("a client that cannot reach its server fails its requests with connection_lost instead of waiting", async () => {
  const gone = await serveBrain({ serverToken: "operator-secret" });
  const url = gone.url;
  await gone.shutdown();
  const brain = new Brain({ url, token: "t" });
  try {
    await assert.rejects(brain.sessions.list(), (error: BrainError) => error.code === "connection_lost");
  } finally {
    await brain.close();
  }
});

Deno.test("a remote Brain refuses per-session host credentials: its sessions belong to the host it connects as", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  const brain = new Brain({ url: server.url, serverToken: "operator-secret", token: "own-token", host: "own" });
  try {
    await assert.rejects(
      brain.sessions.create({ host: { id: "other", token: "x" } }),
      (error: BrainError) => error.code === "invalid_argument",
    );
    const session = await brain.sessions.create();
    assert.deepEqual((await server.journal.getSession(session.id))?.host?.id, "own");
  } finally {
    await brain.close();
    await server.shutdown();
  }
});
