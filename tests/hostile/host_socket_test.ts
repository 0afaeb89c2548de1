import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, tool } from "../../mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { rawWebSocket } from "../_support/raw_websocket.ts";
import { journalRecords, ofKind, until } from "../_support/until.ts";
import { withDeadline } from "../_support/deadline.ts";
import { rawHost } from "../host/raw_host.ts";

const OPERATOR = "operator-secret";
const HEADERS = { authorization: "Bearer secret", "brain-server-token": OPERATOR };
const TOOL = { name: "t", description: "d", inputSchema: { type: "object" }, implementation: "host" };

/** The next reply to request `id` on a raw host socket, skipping other frames. */
async function replyTo(host: Awaited<ReturnType<typeof rawHost>>, id: number): Promise<{ error?: { code: string } }> {
  for (;;) {
    const frame = await withDeadline(host.next(), `the reply to ${id}`) as { t: string; id?: number };
    if (frame.t === "reply" && frame.id === id) return frame as { error?: { code: string } };
  }
}

Deno.test("hostile host sockets: a host that never reads is given up past maxUnreadBytes, its open call ended unknown", async () => {
  await using server = await servedBrain({
    serverToken: OPERATOR,
    pingIntervalMs: 60_000,
    limits: { maxUnreadBytes: 1024 * 1024 },
  });
  using socket = await rawWebSocket(server.url, "/v1/host?host=app", HEADERS);
  assert.match(socket.status, / 101 /);
  await socket.send(JSON.stringify({ id: 1, op: "create", handle: "h", session: "s", tools: [TOOL] }));
  // The create's reply is the one frame this host reads.
  const reply = new Uint8Array(1024);
  const read = await withDeadline(socket.connection.read(reply), "the create's reply");
  assert.match(new TextDecoder().decode(reply.subarray(0, read ?? 0)), /"id":1,"value"/);
  // The call is dispatched to this very host, which never reads the invoke, nor the replies to the reads below.
  await socket.send(JSON.stringify({ id: 2, op: "start", handle: "h", tool: "t", input: { s: "x".repeat(500_000) } }));
  await until(journalRecords(server.journal, "app~s"), (records) => ofKind(records, "tool_call_started").length > 0);
  for (let id = 3; id < 60; id++) await socket.send(JSON.stringify({ id, op: "read", session: "s" }));
  const records = await until(
    journalRecords(server.journal, "app~s"),
    (records) => ofKind(records, "tool_call_finished").length > 0,
    "the call of the host that stopped reading to end",
  );
  assert.equal(ofKind(records, "tool_call_finished")[0].outcome.status, "unknown");
});

Deno.test("hostile host sockets: a subscribe reusing an open stream's id is refused, so the stream limit holds", async () => {
  await using server = await servedBrain({
    serverToken: OPERATOR,
    pingIntervalMs: 60_000,
    limits: { maxStreamsPerHost: 1 },
  });
  const host = await rawHost(server.url, "app", "secret", OPERATOR);
  try {
    const reply = (id: number) => replyTo(host, id);
    host.socket.send(JSON.stringify({ id: 1, op: "create", handle: "h", session: "s", tools: [] }));
    assert.equal((await reply(1)).error, undefined);
    host.socket.send(JSON.stringify({ id: 5, op: "subscribe", session: "s" }));
    assert.equal((await reply(5)).error, undefined);
    host.socket.send(JSON.stringify({ id: 5, op: "subscribe", session: "s" }));
    assert.equal((await reply(5)).error?.code, "protocol_error", "a second stream 5");
    host.socket.send(JSON.stringify({ id: 6, op: "subscribe", session: "s" }));
    assert.equal((await reply(6)).error?.code, "limit_exceeded", "stream 5 still counts");
  } finally {
    host.socket.close();
    await host.closed;
  }
});

Deno.test("hostile host sockets: a wait for a sequence that starts no call is call_not_found at once, never a follow", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR, pingIntervalMs: 60_000 });
  const host = await rawHost(server.url, "app", "secret", OPERATOR);
  try {
    const reply = (id: number) => replyTo(host, id);
    host.socket.send(JSON.stringify({ id: 1, op: "create", handle: "h", session: "s", tools: [TOOL] }));
    assert.equal((await reply(1)).error, undefined);
    host.socket.send(JSON.stringify({ id: 2, op: "start", handle: "h", tool: "t", input: {} }));
    assert.equal((await reply(2)).error, undefined);
    const records = await until(journalRecords(server.journal, "app~s"), (records) => records.length > 0);
    const started = ofKind(records, "tool_call_started")[0].sequence;
    for (const [id, call] of [[3, started + 1], [4, 2 ** 40]]) {
      host.socket.send(JSON.stringify({ id, op: "wait", session: "s", call }));
      assert.equal((await reply(id)).error?.code, "call_not_found", `a wait for ${call}`);
    }
  } finally {
    host.socket.close();
    await host.closed;
  }
});

Deno.test("hostile host sockets: a report over the server's frame limit fails alone payload_too_large; the link and its calls go on", async () => {
  await using server = await servedBrain({
    serverToken: OPERATOR,
    pingIntervalMs: 60_000,
    limits: { maxFrameBytes: 1024 * 1024 },
    models: { default: { provider: new ScriptedProvider(["small", "again"]), model: "m" } },
  });
  const asker = tool({
    name: "asker",
    description: "Asks the model with a message over the frame limit, then with a small one.",
    input: z.object({}),
    run: async (_input, ctx) => {
      const huge = { messages: [{ role: "user" as const, content: "x".repeat(2 * 1024 * 1024) }] };
      const refused = await ctx.model(huge).then(() => "sent", (error) => error instanceof BrainError && error.code);
      const answered = await ctx.model({ messages: [{ role: "user", content: "hi" }] });
      return ctx.finish({ refused, answered: answered.content });
    },
  });
  await using brain = new Brain({ url: server.url, token: "secret", serverToken: OPERATOR, host: "app" });
  const session = await brain.sessions.create({ tools: [asker()], model: "default" });
  const end = await session.call("asker", {});
  assert.deepEqual(end.outcome, { status: "ok", value: { refused: "payload_too_large", answered: "small" } });
  assert.equal(server.connections, 1, "the host never reconnected");
});
