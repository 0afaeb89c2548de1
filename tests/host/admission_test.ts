import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type Outcome, tool } from "../../mod.ts";
import { createBrainServer, serveBrain } from "../../src/host/server/server.ts";
import { DEFAULT_BUDGETS, rawHost } from "./raw_host.ts";
import { UploadedComponents } from "../../src/host/uploaded_components.ts";
import { contentHash } from "../../src/util/content_hash.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { scratchDir } from "../_support/scratch.ts";

const OPERATOR = "operator-secret";

const ping = tool({
  name: "ping",
  description: "Answers pong.",
  input: z.object({}),
  run: (_, ctx) => ctx.finish("pong"),
});

/** Tries a WebSocket upgrade by hand; resolves the status and the error code of a refusal. */
async function upgrade(
  url: string,
  host: string,
  headers: Record<string, string>,
): Promise<{ status: number; code?: string }> {
  const response = await fetch(`${url}/v1/host?host=${encodeURIComponent(host)}`, {
    headers: { upgrade: "websocket", connection: "upgrade", ...headers },
  });
  const body = await response.text();
  return { status: response.status, code: body ? JSON.parse(body).error?.code : undefined };
}

Deno.test("a server told of no credential refuses to start; one with bad limits too", async () => {
  await assert.rejects(createBrainServer({}), hasCode("invalid_argument"));
  await assert.rejects(createBrainServer({ serverToken: "" }), hasCode("invalid_argument"));
  await assert.rejects(createBrainServer({ hostTokens: { "..": "t" } }), hasCode("invalid_argument"));
  await assert.rejects(
    createBrainServer({ serverToken: OPERATOR, limits: { maxHosts: 0 } }),
    hasCode("invalid_argument"),
  );
});

Deno.test("a new host id registers only with the operator credential; then its token alone reconnects it", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR });
  for (const serverToken of [undefined, "wrong-operator", `${OPERATOR}x`]) {
    const stranger = new Brain({ url: server.url, token: "t", host: "newcomer", serverToken });
    await assert.rejects(stranger.sessions.list(), hasCode("unauthorized"));
    await stranger.close();
  }
  assert.equal(server.connections, 0);
  const first = new Brain({ url: server.url, token: "newcomer-token", host: "newcomer", serverToken: OPERATOR });
  await first.sessions.create({ id: "kept", tools: [ping()] });
  await first.close();
  const again = new Brain({ url: server.url, token: "newcomer-token", host: "newcomer" });
  assert.deepEqual((await again.sessions.list()).map((meta) => meta.id), ["kept"]);
  await again.close();
  const thief = new Brain({ url: server.url, token: "other-token", host: "newcomer", serverToken: OPERATOR });
  await assert.rejects(
    thief.sessions.list(),
    hasCode("unauthorized"),
    "the operator credential does not override a host's token",
  );
  await thief.close();
});

Deno.test("hostTokens admit their hosts without the operator credential, by token or by token hash", async () => {
  const hash = "sha-256:" + Array.from(
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode("hashed-token"))),
    (byte) => byte.toString(16).padStart(2, "0"),
  ).join("");
  await using server = await servedBrain({ hostTokens: { app: "app-token", hashed: hash } });
  for (const [host, token] of [["app", "app-token"], ["hashed", "hashed-token"]]) {
    const brain = new Brain({ url: server.url, token, host });
    assert.deepEqual(await brain.sessions.list(), []);
    await brain.close();
  }
  assert.equal((await upgrade(server.url, "app", { authorization: "Bearer wrong" })).status, 401);
  assert.equal(
    (await upgrade(server.url, "other", { authorization: "Bearer x", "brain-server-token": "x" })).status,
    401,
  );
});

Deno.test("nothing is registered before the upgrade: a plain GET cannot fix a host's token", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR });
  const plain = await fetch(`${server.url}/v1/host?host=app`, {
    headers: { authorization: "Bearer squatter", "brain-server-token": OPERATOR },
  });
  await plain.body?.cancel();
  assert.equal(plain.status, 426);
  const broken = await upgrade(server.url, "app", {
    authorization: "Bearer squatter",
    "brain-server-token": OPERATOR,
  });
  assert.equal(broken.status, 400, "a request that says upgrade but is no valid handshake registers nothing");
  const owner = new Brain({ url: server.url, token: "owner-token", host: "app", serverToken: OPERATOR });
  assert.deepEqual(await owner.sessions.list(), [], "the real host is not locked out");
  await owner.close();
});

Deno.test("host ids that could be paths or hold control characters are refused before any check", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR });
  for (const host of ["..", ".", "a/b", "app\0", "app\nx", "", "x".repeat(129)]) {
    const answer = await upgrade(server.url, host, { authorization: "Bearer t", "brain-server-token": OPERATOR });
    assert.deepEqual(answer, { status: 400, code: "invalid_argument" }, JSON.stringify(host));
  }
  assert.equal(server.connections, 0);
});

Deno.test("maxHosts bounds the registered host ids: one more is limit_exceeded (429) and registers nothing", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR, limits: { maxHosts: 1 } });
  const first = new Brain({ url: server.url, token: "t1", host: "first", serverToken: OPERATOR });
  await first.sessions.list();
  assert.deepEqual(
    await upgrade(server.url, "second", { authorization: "Bearer t2", "brain-server-token": OPERATOR }),
    {
      status: 429,
      code: "limit_exceeded",
    },
  );
  await first.close();
  const back = new Brain({ url: server.url, token: "t1", host: "first" });
  assert.deepEqual(await back.sessions.list(), [], "a known host still reconnects");
  await back.close();
});

Deno.test("maxHosts holds for new host ids authenticated at once: only maxHosts are admitted, never all of them", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR, limits: { maxHosts: 3 }, pingIntervalMs: 60_000 });
  // A new id's check ends by hashing the operator credential: held here until all 24 are there, then let go together,
  // so every check finishes in the same turn, before any socket is admitted.
  const digest = crypto.subtle.digest.bind(crypto.subtle);
  const together = Promise.withResolvers<void>();
  let waiting = 0;
  crypto.subtle.digest = (algorithm: AlgorithmIdentifier, data: BufferSource) => {
    const hashed = digest(algorithm, data);
    if (new TextDecoder().decode(data as Uint8Array) !== OPERATOR) return hashed;
    if (++waiting === 24) together.resolve();
    return together.promise.then(() => hashed);
  };
  try {
    const sockets = Array.from({ length: 24 }, (_, index) => {
      const socket = new WebSocket(`${server.url.replace("http", "ws")}/v1/host?host=burst-${index}`, {
        headers: { authorization: `Bearer token-${index}`, "brain-server-token": OPERATOR },
      } as unknown as string[]);
      const opened = new Promise<boolean>((resolve) => {
        socket.onopen = () => resolve(true);
        socket.onerror = () => resolve(false);
      });
      const closed = new Promise((resolve) => socket.onclose = resolve);
      return { socket, opened, closed };
    });
    const opened = await Promise.all(sockets.map(({ opened }) => opened));
    for (const { socket } of sockets) socket.close();
    await Promise.all(sockets.map(({ closed }) => closed));
    assert.equal(opened.filter(Boolean).length, 3, "exactly maxHosts new hosts were admitted");
    assert.equal(server.connections, 3);
  } finally {
    crypto.subtle.digest = digest;
  }
});

Deno.test("maxSessionsPerHost: one more session is limit_exceeded and stores nothing; other hosts are not charged", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR, limits: { maxSessionsPerHost: 2 } });
  await using brain = new Brain({ url: server.url, token: "t", host: "busy", serverToken: OPERATOR });
  await using other = new Brain({ url: server.url, token: "o", host: "other", serverToken: OPERATOR });
  await brain.sessions.create({ id: "one" });
  await brain.sessions.create({ id: "two" });
  await assert.rejects(brain.sessions.create({ id: "three" }), hasCode("limit_exceeded"));
  assert.equal(await server.journal.getSession(hostSessionKey("busy", "three")), undefined);
  await other.sessions.create({ id: "elsewhere" });
  await brain.sessions.delete("one");
  await brain.sessions.create({ id: "three" });
});

Deno.test("maxSessionsPerHost holds for a host using two servers of one journal at once: each counts what the other created", async () => {
  const path = `${scratchDir("admission")}/brain.kv`;
  await using a = await servedBrain({ path, serverToken: OPERATOR, limits: { maxSessionsPerHost: 4 } });
  await using b = await servedBrain({ path, serverToken: OPERATOR, limits: { maxSessionsPerHost: 4 } });
  await using viaA = new Brain({ url: a.url, token: "t", host: "both", serverToken: OPERATOR });
  await using viaB = new Brain({ url: b.url, token: "t", host: "both", serverToken: OPERATOR });
  await viaA.sessions.create({ id: "a1" });
  await viaA.sessions.create({ id: "a2" });
  await viaB.sessions.create({ id: "b1" });
  await viaB.sessions.create({ id: "b2" });
  await assert.rejects(viaA.sessions.create({ id: "a3" }), hasCode("limit_exceeded"));
  await assert.rejects(viaB.sessions.create({ id: "b3" }), hasCode("limit_exceeded"));
  await viaA.sessions.delete("a1");
  await viaA.sessions.create({ id: "a3" });
  await assert.rejects(viaB.sessions.create({ id: "b3" }), hasCode("limit_exceeded"));
  assert.deepEqual((await viaB.sessions.list()).map((meta) => meta.id).sort(), ["a2", "a3", "b1", "b2"]);
});

Deno.test("maxSessionsPerHost is exact for a host creating through three servers of one journal at once", async () => {
  const path = `${scratchDir("admission")}/brain.kv`;
  const limits = { maxSessionsPerHost: 5 };
  await using a = await servedBrain({ path, serverToken: OPERATOR, limits });
  await using b = await servedBrain({ path, serverToken: OPERATOR, limits });
  await using c = await servedBrain({ path, serverToken: OPERATOR, limits });
  const clients = [a, b, c].map((server) =>
    new Brain({ url: server.url, token: "t", host: "many", serverToken: OPERATOR })
  );
  try {
    const created = await Promise.allSettled(
      Array.from({ length: 15 }, (_, index) => clients[index % 3].sessions.create({ id: `s${index}` })),
    );
    const refused = created.filter((outcome) => outcome.status === "rejected") as PromiseRejectedResult[];
    assert.equal(created.length - refused.length, 5, "5 creations succeeded");
    for (const { reason } of refused) {
      assert.ok(hasCode("limit_exceeded")(reason), String(reason));
      assert.deepEqual(reason.details, { limit: "maxSessionsPerHost", value: 5 });
    }
    assert.equal((await clients[0].sessions.list()).length, 5);
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
});

Deno.test("maxCallsPerHost: a call past it is limit_exceeded before any intent is journaled; room frees as calls end", async () => {
  const server = await serveBrain({ serverToken: OPERATOR, limits: { maxCallsPerHost: 2 } });
  const brain = new Brain({ url: server.url, token: "t", host: "caller", serverToken: OPERATOR });
  const release = Promise.withResolvers<void>();
  const hold = tool({
    name: "hold",
    description: "Waits to be released.",
    input: z.object({}),
    run: async (_, ctx) => {
      await release.promise;
      return ctx.finish("released");
    },
  });
  try {
    const session = await brain.sessions.create({ tools: [hold()] });
    const held = [await session.start("hold", {}), await session.start("hold", {})];
    const before = (await session.read()).length;
    await assert.rejects(session.start("hold", {}), hasCode("limit_exceeded"));
    assert.equal((await session.read()).length, before, "the refused call journaled nothing");
    release.resolve();
    for (const call of held) assert.equal((await call.ended).cause, "finish");
    assert.equal((await session.call("hold", {})).cause, "finish");
  } finally {
    release.resolve();
    await brain.close();
    await server.shutdown();
  }
});

Deno.test("an oversize frame is answered payload_too_large unparsed; one without a request id closes the socket 1009", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR, limits: { maxFrameBytes: 4096 } });
  await using brain = new Brain({ url: server.url, token: "t", host: "big", serverToken: OPERATOR });
  const session = await brain.sessions.create({ tools: [ping()] });
  await assert.rejects(session.start("ping", { pad: "x".repeat(10_000) }), hasCode("payload_too_large"));
  assert.equal((await session.call("ping", {})).cause, "finish", "the connection keeps working");
  const raw = await rawHost(server.url, "raw", "raw-token");
  raw.socket.send(JSON.stringify({ op: "list", pad: "é".repeat(4096), id: 1 }));
  const closed = await raw.closed;
  assert.equal(closed.code, 1009);
});

Deno.test("another host's session answers every operation exactly as a missing one", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR });
  await using owner = new Brain({ url: server.url, token: "owner", host: "owner", serverToken: OPERATOR });
  const session = await owner.sessions.create({ tools: [ping()] });
  const { sequence } = await session.start("ping", {});
  const raw = await rawHost(server.url, "prober", "prober-token");
  const answers = async (id: string) => {
    const ops = [
      { op: "read", session: id },
      { op: "subscribe", session: id },
      { op: "wait", session: id, call: sequence },
      { op: "cancel", session: id, call: sequence },
      { op: "get", handle: "h", session: id },
    ];
    const seen = [];
    for (const [index, frame] of ops.entries()) {
      raw.socket.send(JSON.stringify({ id: index + 1, ...frame }));
      const reply = await raw.next() as { error?: { code: string; message: string } };
      seen.push(reply.error && { code: reply.error.code, message: reply.error.message.replaceAll(id, "ID") });
    }
    return seen;
  };
  const foreign = await answers(session.id);
  assert.deepEqual(foreign, await answers("no-such-session"));
  assert.ok(foreign.every((answer) => answer?.code === "session_not_found"), JSON.stringify(foreign));
  raw.socket.close();
  await raw.closed;
});

Deno.test("over the wire, input nested 200,000 deep is invalid_input, not a RangeError or a dropped socket", async () => {
  const server = await serveBrain({ serverToken: OPERATOR });
  const raw = await rawHost(server.url, "deep", "deep-token");
  try {
    const tool = { name: "t", description: "A Tool.", inputSchema: {}, implementation: "host" };
    raw.socket.send(JSON.stringify({ id: 1, op: "create", handle: "h", session: "deep-s", tools: [tool] }));
    assert.deepEqual(await raw.next(), { t: "reply", id: 1, value: DEFAULT_BUDGETS });
    const deep = "[".repeat(200_000) + "]".repeat(200_000);
    raw.socket.send(`{"id":2,"op":"start","handle":"h","tool":"t","input":${deep}}`);
    const reply = await raw.next() as { id: number; error?: { code: string } };
    assert.deepEqual([reply.id, reply.error?.code], [2, "invalid_input"]);
    assert.deepEqual(await server.journal.read(hostSessionKey("deep", "deep-s")), [], "nothing was journaled");
  } finally {
    raw.socket.close();
    await raw.closed;
    await server.shutdown();
  }
});

Deno.test("over the wire, a Tool declaration nested 100,000 deep is protocol_error naming the depth, and creates nothing", async () => {
  const server = await serveBrain({ serverToken: OPERATOR });
  const raw = await rawHost(server.url, "deep", "deep-token");
  try {
    const schema = '{"a":'.repeat(100_000) + "{}" + "}".repeat(100_000);
    const tool = `{"name":"t","description":"A Tool.","implementation":"host","inputSchema":${schema}}`;
    raw.socket.send(`{"id":1,"op":"create","handle":"h","session":"s","tools":[${tool}]}`);
    const reply = await raw.next() as { id: number; error?: { code: string; message: string } };
    assert.deepEqual([reply.id, reply.error?.code], [1, "protocol_error"]);
    assert.match(reply.error!.message, /nests deeper than 256 levels/);
    assert.deepEqual(await server.journal.listSessions(), []);
    raw.socket.send(JSON.stringify({ id: 2, op: "list" }));
    assert.deepEqual(await raw.next(), { t: "reply", id: 2, value: [] }, "the socket keeps working");
  } finally {
    raw.socket.close();
    await raw.closed;
    await server.shutdown();
  }
});

Deno.test("over the wire, a finish nested too deep to journal still ends its call (error invalid_output), never left open", async () => {
  const server = await serveBrain({ serverToken: OPERATOR });
  const raw = await rawHost(server.url, "deep", "deep-token");
  try {
    const tool = { name: "t", description: "A Tool.", inputSchema: {}, implementation: "host" };
    raw.socket.send(JSON.stringify({ id: 1, op: "create", handle: "h", session: "s", tools: [tool] }));
    await raw.next();
    raw.socket.send(JSON.stringify({ id: 2, op: "start", handle: "h", tool: "t", input: {} }));
    const { value: { call } } = await raw.next() as { value: { call: number } };
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    const value = `{"status":"ok","value":${deep}}`;
    raw.socket.send(`{"id":4,"op":"finish","session":"s","call":${call},"cause":"finish","outcome":${value}}`);
    const ended = await raw.next() as { t: string; id: number; end: { cause: string; outcome: Outcome } };
    assert.deepEqual([ended.t, ended.id, ended.end.cause], ["ended", 4, "error"]);
    assert.equal(ended.end.outcome.status === "error" && ended.end.outcome.error.code, "invalid_output");
    assert.deepEqual(await server.journal.openCalls(hostSessionKey("deep", "s")), []);
  } finally {
    raw.socket.close();
    await raw.closed;
    await server.shutdown();
  }
});

Deno.test("maxHandlesPerHost and maxStreamsPerHost: one more handle or record stream is limit_exceeded", async () => {
  await using server = await servedBrain({
    serverToken: OPERATOR,
    limits: { maxHandlesPerHost: 2, maxStreamsPerHost: 1 },
  });
  await using brain = new Brain({ url: server.url, token: "t", host: "holder", serverToken: OPERATOR });
  const first = await brain.sessions.create({ id: "first", tools: [ping()] });
  await brain.sessions.create({ id: "second" });
  await assert.rejects(brain.sessions.create({ id: "third" }), hasCode("limit_exceeded"));
  assert.equal(await server.journal.getSession(hostSessionKey("holder", "third")), undefined);
  await first.call("ping", {});
  const following = first.records()[Symbol.asyncIterator]();
  assert.equal((await following.next()).value?.kind, "tool_call_started");
  const refused = first.records()[Symbol.asyncIterator]();
  await assert.rejects(refused.next(), hasCode("limit_exceeded"));
  await following.return?.();
});

Deno.test("maxUploadsPerHost: one more distinct Component is limit_exceeded; a known one still resolves", async () => {
  const uploads = new UploadedComponents(1);
  const upload = async (text: string) => {
    const bytes = new TextEncoder().encode(text);
    return {
      tool: "t",
      url: "https://example.test/c.wasm",
      sha256: await contentHash(bytes),
      bytes: bytes.toBase64(),
      options: {},
    };
  };
  const first = await upload("first component");
  const kept = await uploads.component(first);
  await assert.rejects(uploads.component(await upload("second component")), hasCode("limit_exceeded"));
  assert.equal(await uploads.component({ ...first, bytes: undefined }), kept);
  assert.deepEqual(uploads.lacking([first.sha256]), []);
});
