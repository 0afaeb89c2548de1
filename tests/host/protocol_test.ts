import assert from "node:assert/strict";
import { Brain, type CallEnd } from "../../mod.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { decodeServerFrames } from "../../src/host/protocol.ts";
import { DEFAULT_BUDGETS, rawHost } from "./raw_host.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";

Deno.test("a host cannot report on a call it was not sent, nor start on a handle it does not hold", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  const raw = await rawHost(server.url, "raw", "raw-token");
  try {
    raw.socket.send(JSON.stringify({ id: 1, op: "attach", handles: [] }));
    assert.deepEqual(await raw.next(), { t: "reply", id: 1, value: { failed: [], maxFrameBytes: 16 * 1024 * 1024 } });
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

Deno.test("a malformed request is answered protocol_error and the host socket stays open", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  const raw = await rawHost(server.url, "raw", "raw-token");
  try {
    raw.socket.send(JSON.stringify({ id: 1, op: "launch_missiles" }));
    assert.deepEqual((await raw.next() as { id: number; error: { code: string } }).error.code, "protocol_error");
    raw.socket.send("not json");
    raw.socket.send(JSON.stringify({ id: 2, op: "list" }));
    assert.deepEqual(await raw.next(), { t: "reply", id: 2, value: [] });
  } finally {
    raw.socket.close();
    await raw.closed;
    await server.shutdown();
  }
});

Deno.test("a malformed report ends only its own call, with error protocol_error; the host keeps serving", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  const raw = await rawHost(server.url, "raw", "raw-token");
  const advertised = { name: "t", description: "t", inputSchema: { type: "object" }, implementation: "host" };
  try {
    raw.socket.send(JSON.stringify({ id: 1, op: "create", handle: "h", session: "s", tools: [advertised] }));
    assert.deepEqual(await raw.next(), { t: "reply", id: 1, value: DEFAULT_BUDGETS });
    raw.socket.send(JSON.stringify({ id: 2, op: "start", handle: "h", tool: "t", input: {} }));
    assert.deepEqual(await raw.next(), { t: "reply", id: 2, value: { call: 1, run: true } });
    raw.socket.send(JSON.stringify({ id: 3, op: "start", handle: "h", tool: "t", input: {} }));
    assert.deepEqual(await raw.next(), { t: "reply", id: 3, value: { call: 2, run: true } });
    // An `ok` outcome without its value is not an outcome: call 1 ends `error`, call 2 is untouched.
    raw.socket.send(
      JSON.stringify({ id: 4, op: "finish", session: "s", call: 1, cause: "finish", outcome: { status: "ok" } }),
    );
    const frames = [await raw.next(), await raw.next()] as Record<string, unknown>[];
    const ended = frames.find((frame) => frame.t === "ended") as { end: CallEnd };
    assert.deepEqual([ended.end.cause, ended.end.outcome.status === "error" && ended.end.outcome.error.code], [
      "error",
      "protocol_error",
    ]);
    assert.equal(
      (frames.find((frame) => frame.t === "reply") as { error: { code: string } }).error.code,
      "protocol_error",
    );
    raw.socket.send(JSON.stringify({ id: 5, op: "finish", session: "s", call: 2, cause: "finish" }));
    assert.deepEqual(await raw.next(), {
      t: "ended",
      session: "s",
      call: 2,
      end: { call: 2, sequence: 5, cause: "finish", outcome: { status: "ok", value: null } },
      id: 5,
      late: false,
    });
    // The next frame answers the next request: no `abort` follows a host's own finish.
    raw.socket.send(JSON.stringify({ id: 6, op: "read", session: "s", from: 6 }));
    assert.deepEqual(await raw.next(), { t: "reply", id: 6, value: [] });
  } finally {
    raw.socket.close();
    await raw.closed;
    await server.shutdown();
  }
});

Deno.test("a host's finish or returned report with content but no outcome ends its call protocol_error, never drops the text", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  const raw = await rawHost(server.url, "raw", "raw-token");
  const advertised = { name: "t", description: "t", inputSchema: { type: "object" }, implementation: "host" };
  try {
    raw.socket.send(JSON.stringify({ id: 1, op: "create", handle: "h", session: "s", tools: [advertised] }));
    assert.deepEqual(await raw.next(), { t: "reply", id: 1, value: DEFAULT_BUDGETS });
    for (const [id, op] of [[2, "finish"], [4, "returned"]] as const) {
      raw.socket.send(JSON.stringify({ id, op: "start", handle: "h", tool: "t", input: {} }));
      const { value } = await raw.next() as { value: { call: number } };
      raw.socket.send(
        JSON.stringify({ id: id + 1, op, session: "s", call: value.call, cause: "finish", content: "Done." }),
      );
      const frames = [await raw.next(), await raw.next()] as Record<string, unknown>[];
      const ended = frames.find((frame) => frame.t === "ended") as { end: CallEnd };
      assert.deepEqual([ended.end.cause, ended.end.outcome.status === "error" && ended.end.outcome.error.code], [
        "error",
        "protocol_error",
      ], op);
    }
  } finally {
    raw.socket.close();
    await raw.closed;
    await server.shutdown();
  }
});

Deno.test("a client that cannot reach its server fails its requests with connection_lost instead of waiting", async () => {
  const gone = await serveBrain({ serverToken: "operator-secret" });
  const url = gone.url;
  await gone.shutdown();
  await using brain = new Brain({ url, token: "t" });
  await assert.rejects(brain.sessions.list(), hasCode("connection_lost"));
});

Deno.test("a remote Brain refuses per-session host credentials: its sessions belong to the host it connects as", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  await using brain = new Brain({ url: server.url, serverToken: "operator-secret", token: "own-token", host: "own" });
  await assert.rejects(
    brain.sessions.create({ host: { id: "other", token: "x" } }),
    hasCode("invalid_argument"),
  );
  const session = await brain.sessions.create();
  assert.deepEqual((await server.journal.getSession(hostSessionKey("own", session.id)))?.host?.id, "own");
});

Deno.test("frames sent together as one JSON array are applied in order, a malformed one among them ends only itself, and the replies come back together", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  const raw = await rawHost(server.url, "raw", "raw-token");
  const advertised = { name: "t", description: "t", inputSchema: { type: "object" }, implementation: "host" };
  const messages: unknown[] = [];
  raw.socket.addEventListener("message", (event) => messages.push(JSON.parse(event.data)));
  try {
    raw.socket.send(JSON.stringify({ id: 1, op: "create", handle: "h", session: "s", tools: [advertised] }));
    assert.deepEqual(await raw.next(), { t: "reply", id: 1, value: DEFAULT_BUDGETS });
    messages.length = 0;
    raw.socket.send(JSON.stringify([
      { id: 2, op: "start", handle: "h", tool: "t", input: {} },
      { id: 3, op: "start", handle: "h", tool: "t", input: {} },
      { id: 4, op: "start", handle: "h", input: {} },
      "not a frame",
      { id: 5, op: "start", handle: "h", tool: "t", input: {} },
    ]));
    const replies = [await raw.next(), await raw.next(), await raw.next(), await raw.next()] as {
      id: number;
      value?: unknown;
      error?: { code: string };
    }[];
    assert.deepEqual(replies.map(({ id, value, error }) => [id, value ?? error?.code]), [
      [4, "protocol_error"],
      [2, { call: 1, run: true }],
      [3, { call: 2, run: true }],
      [5, { call: 3, run: true }],
    ]);
    assert.equal(messages.length, 2, "the synchronous refusal, then the three committed starts in one message");
    assert.deepEqual(messages.map((message) => Array.isArray(message) ? message.length : 1), [1, 3]);
  } finally {
    raw.socket.close();
    await raw.closed;
    await server.shutdown();
  }
});

Deno.test("a telemetry push decodes only with a handle and a whole entry; a malformed one is malformed, never thrown", () => {
  const entry = { tool: "probe", call: 3, level: "info", message: "m" };
  assert.deepEqual(decodeServerFrames(JSON.stringify({ t: "telemetry", handle: "h1", entry })), [
    { t: "telemetry", handle: "h1", entry },
  ]);
  for (
    const bad of [
      { t: "telemetry", entry },
      { t: "telemetry", handle: "h1" },
      { t: "telemetry", handle: "h1", entry: { ...entry, call: 0 } },
      { t: "telemetry", handle: "h1", entry: { ...entry, message: 5 } },
      { t: "telemetry", handle: "h1", entry: { ...entry, code: 1 } },
    ]
  ) {
    const [decoded] = decodeServerFrames(JSON.stringify(bad));
    assert.ok("malformed" in decoded && decoded.malformed, JSON.stringify(bad));
  }
});
