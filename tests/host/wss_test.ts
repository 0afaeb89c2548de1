import assert from "node:assert/strict";
import { Brain, type BrainError } from "../../mod.ts";
import { type BrainServer, createBrainServer } from "../../src/host/server/mod.ts";
import type { HostConnectionEvent } from "../../src/host/client/connection.ts";
import { denoScript, waitForKey } from "../_support/deno_script.ts";
import { hasCode } from "../_support/has_code.ts";
import { MOVED } from "../../src/host/protocol.ts";
import { scratchDir } from "../_support/scratch.ts";

// A test CA and a certificate it signed for DNS:localhost, IP:127.0.0.1 and IP:::1, valid until 2126; the CA's
// key was thrown away. Made with `openssl req -x509` (CA:TRUE) and `openssl x509 -req` (serverAuth).
const TLS = "tests/_support/fixtures/tls";
const cert = Deno.readTextFileSync(`${TLS}/cert.pem`);
const key = Deno.readTextFileSync(`${TLS}/key.pem`);
const SERVER_TOKEN = "tls-operator";
const dir = scratchDir("wss");

/** A Brain server over the KV file at `path`, served over TLS on 127.0.0.1:`port`; `await using` stops both. */
async function tlsBrainServer(path: string, port = 0) {
  const brain: BrainServer = await createBrainServer({ path, serverToken: SERVER_TOKEN });
  const http = Deno.serve({ hostname: "127.0.0.1", port, cert, key, onListen: () => {} }, brain.fetch);
  return {
    brain,
    port: http.addr.port,
    async [Symbol.asyncDispose]() {
      await brain.close();
      await http.shutdown();
    },
  };
}

for (const hostname of ["127.0.0.1", "localhost"]) {
  Deno.test(`a remote Brain over wss://${hostname} trusting a private CA with --cert: calls, a restart, close`, async () => {
    const path = `${dir}/${hostname}.kv`;
    let server = await tlsBrainServer(path);
    try {
      const url = `wss://${hostname}:${server.port}`;
      await using app = denoScript("tests/host/fixtures/tls_host.ts", [url, SERVER_TOKEN], {
        permissions: ["--cert", `${TLS}/ca.pem`, "--allow-net=127.0.0.1,localhost"],
      });
      assert.deepEqual(JSON.parse(await app.line() ?? "null"), { event: "attached" });
      const first = await waitForKey(app, "first");
      assert.deepEqual(first.first, { status: "ok", value: "x".repeat(3_000) }, "a result of one 3 kB message");
      assert.equal(server.brain.connections, 1);

      await server[Symbol.asyncDispose]();
      server = await tlsBrainServer(path, server.port);
      const second = await waitForKey(app, "second");
      assert.deepEqual(second.second, { status: "ok", value: "x".repeat(70_000) }, "served after the restart");
      assert.deepEqual(await waitForKey(app, "closed"), { closed: true });
      assert.equal((await app.process.status).code, 0);
      assert.equal(server.brain.connections, 1, "the client reattached once to the restarted server");
    } finally {
      await server[Symbol.asyncDispose]();
    }
  });
}

Deno.test("a client that does not trust the server's certificate fails connection_failed through onConnection, retrying until close()", async () => {
  await using server = await tlsBrainServer(`${dir}/untrusted.kv`);
  const failures: HostConnectionEvent[] = [];
  const thrice = Promise.withResolvers<void>();
  const brain = new Brain({
    url: `wss://127.0.0.1:${server.port}`,
    token: "tls-token",
    host: "untrusting",
    serverToken: SERVER_TOKEN,
    maxReconnectDelayMs: 100,
    onConnection: (event) => {
      failures.push(event);
      if (failures.length === 3) thrice.resolve();
    },
  });
  try {
    await assert.rejects(brain.sessions.create(), hasCode("connection_failed", /certificate.*--cert/));
    await thrice.promise;
  } finally {
    await brain.close();
  }
  for (const { type, error, retryInMs } of failures) {
    assert.equal(type, "failed");
    assert.equal((error as BrainError).code, "connection_failed");
    assert.match((error as BrainError).message, /UnknownIssuer/);
    assert.ok(retryInMs !== undefined && retryInMs <= 100);
  }
  assert.equal(server.brain.connections, 0, "no host socket was ever accepted");
});

Deno.test("a host reached over wss:// is never sent off TLS by a moved close: connection_failed, its tokens never sent in clear", async () => {
  const plain: string[] = [];
  await using clear = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    plain.push(request.headers.get("authorization") ?? "");
    return new Response("never", { status: 404 });
  });
  await using mover = Deno.serve({ hostname: "127.0.0.1", port: 0, cert, key, onListen: () => {} }, (request) => {
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.onopen = () => socket.close(MOVED, `http://127.0.0.1:${clear.addr.port}`);
    return response;
  });
  await using app = denoScript("tests/host/fixtures/tls_moved_host.ts", [`wss://127.0.0.1:${mover.addr.port}`], {
    permissions: ["--cert", `${TLS}/ca.pem`, "--allow-net=127.0.0.1"],
  });
  assert.deepEqual(await waitForKey(app, "refused"), { refused: "connection_failed" });
  assert.deepEqual(await waitForKey(app, "closed"), { closed: true });
  assert.equal((await app.process.status).code, 0);
  assert.deepEqual(plain, [], "nothing reached the plain-text server");
});
