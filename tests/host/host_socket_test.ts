import assert from "node:assert/strict";
import { HostSocket } from "../../src/host/client/host_socket.ts";
import { serve } from "../_support/serve.ts";

/** A HostSocket to `url`, with its callbacks as promises and queues. */
function open(url: string, headers: Record<string, string> = {}) {
  const socket = new HostSocket(new URL(url.replace("http", "ws")), headers);
  const messages: string[] = [];
  const waiting: ((message: string) => void)[] = [];
  const errors: string[] = [];
  const opened = new Promise<void>((resolve) => socket.onopen = resolve);
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.onclose = resolve);
  socket.onerror = ({ message }) => errors.push(message);
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
  await using server = serve(() => Response.json({ error: { code: "unauthorized" } }, { status: 401 }));
  const client = open(server.url);
  client.socket.send("dropped");
  assert.equal((await client.closed).code, 1006);
  assert.equal(client.errors.length, 1);
  assert.match(client.errors[0], /\b401\b/);
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
