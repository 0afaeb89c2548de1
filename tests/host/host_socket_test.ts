import assert from "node:assert/strict";
import { HostSocket } from "../../src/host/client/host_socket.ts";
import type { BrainError } from "../../mod.ts";
import { hasCode } from "../_support/has_code.ts";
import { serve } from "../_support/serve.ts";

/** A HostSocket to `url`, with its callbacks as promises and queues. */
function open(url: string, headers: Record<string, string> = {}) {
  const socket = new HostSocket(new URL(url.replace("http", "ws")), headers);
  const messages: string[] = [];
  const waiting: ((message: string) => void)[] = [];
  const errors: BrainError[] = [];
  const opened = new Promise<void>((resolve) => socket.onopen = resolve);
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.onclose = resolve);
  socket.onerror = ({ error }) => errors.push(error);
  socket.onmessage = ({ data }) => {
    const waiter = waiting.shift();
    if (waiter) waiter(data);
    else messages.push(data);
  };
  const next = () =>
    messages.length > 0 ? Promise.resolve(messages.shift()!) : new Promise<string>((resolve) => waiting.push(resolve));
  return { socket, opened, closed, errors, next };
}

Deno.test("the host socket carries text of every frame length both ways, whole and in order", async () => {
  await using server = serve((request) => {
    const authorization = request.headers.get("authorization");
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.onmessage = (event) => socket.send(`${event.data}|${authorization}`);
    return response;
  });
  const client = open(server.url, { authorization: "Bearer secret" });
  await client.opened;
  const sizes = [0, 1, 125, 126, 1_025, 65_535, 65_536, 300_000];
  const texts = sizes.map((size, at) => "é✓".repeat(at).concat("x".repeat(size)));
  for (const text of texts) client.socket.send(text);
  for (const text of texts) assert.equal(await client.next(), `${text}|Bearer secret`);
  client.socket.close(1000, "done");
  assert.deepEqual(await client.closed, { code: 1000, reason: "done" });
  assert.deepEqual(client.errors, []);
});

Deno.test("a close from the server reaches onclose with its code and reason", async () => {
  await using server = serve((request) => {
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.onopen = () => socket.close(4009, "in use");
    return response;
  });
  const client = open(server.url);
  assert.deepEqual(await client.closed, { code: 4009, reason: "in use" });
  assert.equal(client.socket.readyState, 3);
});

Deno.test("a refused upgrade is an error naming its status, then a close 1006; sends before it are dropped", async () => {
  for (const [status, code] of [[401, "unauthorized"], [503, "connection_lost"], [404, "connection_lost"]] as const) {
    await using server = serve(() => Response.json({ error: { code: "refused" } }, { status }));
    const client = open(server.url);
    client.socket.send("dropped");
    assert.equal((await client.closed).code, 1006);
    assert.equal(client.errors.length, 1);
    assert.ok(hasCode(code, new RegExp(`HTTP ${status}\\b`))(client.errors[0]), client.errors[0].message);
  }
});

Deno.test("an upgrade answer with a wrong Sec-WebSocket-Accept is a protocol_error", async () => {
  using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const client = open(`http://127.0.0.1:${listener.addr.port}`);
  using conn = await listener.accept();
  await conn.read(new Uint8Array(4096));
  const answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
    "Sec-WebSocket-Accept: d3Jvbmc=\r\n\r\n";
  await conn.write(new TextEncoder().encode(answer));
  assert.equal((await client.closed).code, 1006);
  assert.equal(client.errors.length, 1);
  assert.ok(hasCode("protocol_error", /Sec-WebSocket-Accept/)(client.errors[0]));
});

Deno.test("a header that could end the upgrade request early, or a scheme not ws(s), is refused before connecting", async () => {
  const seen: (string | null)[] = [];
  await using server = serve((request) => {
    seen.push(request.headers.get("authorization"));
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.onopen = () => socket.close(1000, "seen");
    return response;
  });
  const url = new URL(server.url.replace("http", "ws"));
  for (const value of ["Bearer a\r\nx-injected: 1", "Bearer a\nb", "Bearer a\rb", "Bearer \0"]) {
    assert.throws(() => new HostSocket(url, { authorization: value }), hasCode("invalid_argument", /CR or LF/));
  }
  assert.throws(() => new HostSocket(url, { "x-a\r\nb": "1" }), hasCode("invalid_argument", /header name/));
  assert.throws(() => new HostSocket(url, { "bad name": "1" }), hasCode("invalid_argument", /header name/));
  assert.throws(() => new HostSocket(new URL(server.url), {}), hasCode("invalid_argument", /ws: or wss:/));
  // The first request the server ever sees is this one's.
  const sentinel = open(server.url, { authorization: "Bearer sentinel\tok" });
  assert.equal((await sentinel.closed).code, 1000);
  assert.deepEqual(seen, ["Bearer sentinel\tok"]);
});

Deno.test("the upgrade request keeps the URL's path and query, and names the host with its port", async () => {
  const requests: { path: string; host: string | null }[] = [];
  await using server = serve((request) => {
    const url = new URL(request.url);
    requests.push({ path: `${url.pathname}${url.search}`, host: request.headers.get("host") });
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.onopen = () => socket.close(1000, "seen");
    return response;
  });
  const client = open(`${server.url}/v1/a%20b/host?host=app%0D%0A&instance=1#fragment`);
  assert.equal((await client.closed).code, 1000);
  assert.deepEqual(requests, [{ path: "/v1/a%20b/host?host=app%0D%0A&instance=1", host: server.host }]);
});

/** Whether this test may listen on and connect to ::1, and the machine has it. */
function loopbackV6(): boolean {
  if (Deno.permissions.querySync({ name: "net", host: "[::1]" }).state !== "granted") return false;
  try {
    Deno.listen({ hostname: "::1", port: 0 }).close();
    return true;
  } catch {
    return false;
  }
}

Deno.test({
  name: "an IPv6 literal host is connected to without its brackets and named with them in the Host header",
  ignore: !loopbackV6(),
  fn: async () => {
    const hosts: (string | null)[] = [];
    const server = Deno.serve({ hostname: "::1", port: 0, onListen: () => {} }, (request) => {
      hosts.push(request.headers.get("host"));
      const { socket, response } = Deno.upgradeWebSocket(request);
      socket.onmessage = (event) => socket.send(`echo ${event.data}`);
      return response;
    });
    try {
      const client = open(`ws://[::1]:${server.addr.port}/v1/host`);
      await client.opened;
      client.socket.send("x".repeat(2_000));
      assert.equal(await client.next(), `echo ${"x".repeat(2_000)}`);
      client.socket.close();
      assert.equal((await client.closed).code, 1000);
      assert.deepEqual(hosts, [`[::1]:${server.addr.port}`]);
    } finally {
      await server.shutdown();
    }
  },
});

Deno.test("a TLS handshake the server never answers is given up by close(), which reports 1006", async () => {
  using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const client = open(`wss://127.0.0.1:${listener.addr.port}`);
  using _conn = await listener.accept();
  client.socket.close();
  assert.equal((await client.closed).code, 1006);
  assert.deepEqual(client.errors, []);
});

Deno.test("wss:// to a server that does not speak TLS is connection_failed, naming the handshake", async () => {
  await using server = serve(() => new Response("plain"));
  const client = open(server.url.replace("http", "wss"));
  assert.equal((await client.closed).code, 1006);
  assert.equal(client.errors.length, 1);
  assert.ok(hasCode("connection_failed", /TLS handshake/)(client.errors[0]), client.errors[0].message);
});

Deno.test("a server that never answers the upgrade is given up by close(), which reports 1006", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepted = listener.accept();
  try {
    const client = open(`http://127.0.0.1:${listener.addr.port}`);
    const conn = await accepted;
    client.socket.close();
    assert.equal((await client.closed).code, 1006);
    conn.close();
  } finally {
    listener.close();
  }
});
