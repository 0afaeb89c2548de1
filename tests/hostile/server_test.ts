import assert from "node:assert/strict";
import { servedBrain } from "../_support/served_brain.ts";
import { withDeadline } from "../_support/deadline.ts";
import { rawHost } from "../host/raw_host.ts";

const OPERATOR = "operator-secret";

type Reply = { t: string; id?: number; value?: unknown; error?: { code: string; message: string } };

/** A raw host on `url` that sends requests with fresh ids and waits for each one's reply. */
async function asker(url: string, host = "app") {
  const raw = await rawHost(url, host, "secret", OPERATOR);
  let id = 0;
  const replies = new Map<number, (reply: Reply) => void>();
  (async () => {
    for (;;) {
      const frame = await raw.next() as Reply;
      if (frame.t === "reply" && frame.id !== undefined) replies.get(frame.id)?.(frame);
    }
  })();
  return {
    raw,
    ask(frame: Record<string, unknown>): Promise<Reply> {
      const mine = ++id;
      const reply = new Promise<Reply>((resolve) => replies.set(mine, resolve));
      raw.socket.send(JSON.stringify({ id: mine, ...frame }));
      return withDeadline(reply, `the reply to ${JSON.stringify(frame).slice(0, 80)}`, 3_000);
    },
    async [Symbol.asyncDispose]() {
      raw.socket.close();
      await raw.closed;
    },
  };
}

Deno.test("hostile host frames: binary, non-JSON, deep, unknown and misplaced frames are dropped or refused, the socket serves on", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR, pingIntervalMs: 60_000 });
  await using host = await asker(server.url);
  for (
    const garbage of [
      new Uint8Array([0, 1, 2, 255]),
      "not json",
      "null",
      "[]",
      "[1,2,3]",
      '"text"',
      "[".repeat(200_000) + "]".repeat(200_000),
      '{"op":"list","id":1e400}',
      JSON.stringify({ t: "reply", id: 7 }),
      '{"__proto__":{"op":"list"},"id":8}',
    ]
  ) host.raw.socket.send(garbage);
  for (const op of ["nope", "__proto__", "constructor", "toString"]) {
    assert.equal((await host.ask({ op })).error?.code, "protocol_error", op);
  }
  assert.deepEqual((await host.ask({ op: "list" })).value, [], "the socket still serves");
});

Deno.test("hostile host frames: names of other hosts' sessions, paths and oversized names are refused with codes", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR, pingIntervalMs: 60_000 });
  await using other = await asker(server.url, "other");
  assert.equal((await other.ask({ op: "create", handle: "h", session: "x", tools: [] })).error, undefined);
  await using host = await asker(server.url);
  for (const session of ["other~x", "../x", "x".repeat(100_000)]) {
    const reply = await host.ask({ op: "read", session });
    assert.ok(["invalid_argument", "protocol_error"].includes(reply.error?.code ?? ""), session.slice(0, 20));
  }
  assert.equal(
    (await host.ask({ op: "read", session: "x" })).error?.code,
    "session_not_found",
    "x is other's, not app's",
  );
  const reports = [
    { op: "emit", session: "x", call: 1, event: "e", data: 1 },
    { op: "finish", session: "x", call: 1, cause: "finish" },
    { op: "model", session: "x", call: 1, request: {} },
  ];
  for (const report of reports) assert.equal((await host.ask(report)).error?.code, "call_not_found", report.op);
  assert.equal((await host.ask({ op: "subscribe", session: "x", from: 1e300 })).error?.code, "protocol_error");
});

Deno.test("hostile host frames: a reused session handle is refused, so no session is orphaned past the handle limit", async () => {
  await using server = await servedBrain({
    serverToken: OPERATOR,
    pingIntervalMs: 60_000,
    limits: { maxHandlesPerHost: 3 },
  });
  await using host = await asker(server.url);
  assert.equal((await host.ask({ op: "create", handle: "h", session: "s0", tools: [] })).error, undefined);
  for (let index = 1; index <= 5; index++) {
    const reply = await host.ask({ op: "create", handle: "h", session: `s${index}`, tools: [] });
    assert.equal(reply.error?.code, "invalid_argument", `create ${index} on an open handle`);
  }
  assert.equal(((await host.ask({ op: "list" })).value as unknown[]).length, 1, "no refused create stored a session");
});

Deno.test("hostile host frames: handles opened all at once stop at maxHandlesPerHost; the rest are limit_exceeded", async () => {
  await using server = await servedBrain({
    serverToken: OPERATOR,
    pingIntervalMs: 60_000,
    limits: { maxHandlesPerHost: 3 },
  });
  await using host = await asker(server.url);
  assert.equal((await host.ask({ op: "create", handle: "h", session: "s0", tools: [] })).error, undefined);
  const replies = await Promise.all(
    Array.from({ length: 20 }, (_, index) => host.ask({ op: "get", handle: `g${index}`, session: "s0" })),
  );
  const codes = replies.map((reply) => reply.error?.code ?? "opened");
  assert.equal(codes.filter((code) => code === "opened").length, 2, "two more handles make maxHandlesPerHost");
  assert.ok(codes.every((code) => code === "opened" || code === "limit_exceeded"), codes.join());
});

Deno.test("hostile host frames: start options past their bounds are refused before any intent is journaled", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR, pingIntervalMs: 60_000 });
  await using host = await asker(server.url);
  const tool = { name: "t", description: "d", inputSchema: { type: "object" }, implementation: "host" };
  assert.equal((await host.ask({ op: "create", handle: "h", session: "s", tools: [tool] })).error, undefined);
  const starts = [
    { deadline: 1e300 },
    { deadline: -1 },
    { activation: "a".repeat(10_000) },
    { traceparent: "x".repeat(500_000) },
    { input: JSON.parse("[".repeat(300) + "]".repeat(300)) },
  ];
  for (const start of starts) {
    const reply = await host.ask({ op: "start", handle: "h", tool: "t", input: {}, ...start });
    assert.ok(reply.error, `${Object.keys(start)[0]} was accepted`);
    assert.ok(["invalid_argument", "invalid_input", "protocol_error"].includes(reply.error.code), reply.error.code);
  }
  assert.deepEqual((await host.ask({ op: "read", session: "s" })).value, [], "nothing was journaled");
});

Deno.test("hostile host frames: floods of pings and batches leave the socket answering; an oversized frame closes it 1009", async () => {
  await using server = await servedBrain({
    serverToken: OPERATOR,
    pingIntervalMs: 60_000,
    limits: { maxFrameBytes: 1024 * 1024 },
  });
  await using host = await asker(server.url);
  host.raw.socket.send(JSON.stringify(Array.from({ length: 50_000 }, () => ({ op: "ping" }))));
  assert.deepEqual((await host.ask({ op: "list" })).value, []);
  host.raw.socket.send("x".repeat(2 * 1024 * 1024));
  assert.equal((await withDeadline(host.raw.closed, "the close")).code, 1009);
});

/** Writes `text` on a fresh TCP connection to `url` and returns the status line of the answer, or undefined. */
async function rawHttp(url: string, text: string): Promise<string | undefined> {
  const { hostname, port } = new URL(url);
  using connection = await Deno.connect({ hostname, port: Number(port) });
  await connection.write(new TextEncoder().encode(text));
  const buffer = new Uint8Array(4096);
  const read = await withDeadline(connection.read(buffer), "the answer");
  return read === null ? undefined : new TextDecoder().decode(buffer.subarray(0, read)).split("\r\n")[0];
}

Deno.test("hostile HTTP: unknown routes and methods are JSON errors with codes; malformed requests are 400", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR, pingIntervalMs: 60_000 });
  const cases: [string, RequestInit, number, string][] = [
    ["/nope", { method: "PATCH" }, 404, "invalid_argument"],
    ["/v1/host?host=app", { method: "POST", body: "x".repeat(4 * 1024 * 1024) }, 404, "invalid_argument"],
    ["/v1/host?host=app", {}, 426, "protocol_error"],
    ["/v1/host?host=" + "x".repeat(5000), { headers: { upgrade: "websocket" } }, 400, "invalid_argument"],
    ["/v1/host?host=app", { headers: { upgrade: "websocket", authorization: "Bearer wrong" } }, 401, "unauthorized"],
    ["/v1/sessions?limit=1e309", { headers: { authorization: `Bearer ${OPERATOR}` } }, 400, "invalid_argument"],
    ["/v1/sessions", { headers: { authorization: "Basic %%%%" } }, 401, "unauthorized"],
  ];
  for (const [path, init, status, code] of cases) {
    const response = await fetch(server.url + path, init);
    assert.equal(response.status, status, path.slice(0, 40));
    assert.equal((await response.json()).error.code, code, path.slice(0, 40));
  }
  for (
    const request of [
      "GARBAGE\r\n\r\n",
      `GET / HTTP/1.1\r\nHost: x\r\nX-A: ${"a".repeat(200_000)}\r\n\r\n`,
      "GET /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
      "POST /v1/health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nzzz\r\n",
    ]
  ) assert.equal(await rawHttp(server.url, request), "HTTP/1.1 400 Bad Request", request.slice(0, 30));
});

Deno.test("hostile HTTP: slowloris headers and a body that never ends neither block other clients nor hang shutdown", async () => {
  const server = await servedBrain({ serverToken: OPERATOR, pingIntervalMs: 60_000 });
  const { hostname, port } = new URL(server.url);
  const stalled = await Promise.all(Array.from({ length: 20 }, () => Deno.connect({ hostname, port: Number(port) })));
  try {
    for (const [index, connection] of stalled.entries()) {
      await connection.write(new TextEncoder().encode(
        index % 2
          ? "GET /v1/health HTTP/1.1\r\nHost: x\r\n"
          : "POST /v1/viewer/login HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc",
      ));
    }
    const health = await fetch(`${server.url}/v1/health`);
    assert.equal(health.status, 200);
    await health.body?.cancel();
    await withDeadline(server.shutdown(), "shutdown with stalled clients connected", 3_000);
  } finally {
    for (const connection of stalled) connection.close();
  }
});
