import assert from "node:assert/strict";
import { Brain } from "../../mod.ts";
import { pendingUpgrades, serveBrain } from "../../src/host/server/server.ts";
import { PendingUpgrades } from "../../src/host/server/pending_upgrades.ts";
import { withDeadline } from "../_support/deadline.ts";
import { startPostgres } from "../_support/postgres.ts";
import { faultProxy } from "./fault_proxy.ts";

/** Asks for a WebSocket upgrade over a raw TCP connection and leaves at once, before the server can answer. */
async function tornUpgrade(port: number, path: string, headers: Record<string, string>): Promise<void> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const lines = [
    `GET ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    "Upgrade: websocket",
    "Connection: Upgrade",
    `Sec-WebSocket-Key: ${crypto.getRandomValues(new Uint8Array(16)).toBase64()}`,
    "Sec-WebSocket-Version: 13",
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  await conn.write(new TextEncoder().encode(`${lines.join("\r\n")}\r\n\r\n`));
  conn.close();
}

/** Resolves once `count()` is `wanted`, looking again every 20 ms; rejects naming what it saw after 5 s. */
async function reaches(count: () => number, wanted: (n: number) => boolean, what: string): Promise<void> {
  const giveUp = Date.now() + 5_000;
  while (!wanted(count())) {
    if (Date.now() > giveUp) throw new Error(`${what}: still ${count()} after 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

Deno.test("upgrades whose client left before a slow answer hold nothing past the handshake timeout, and never hold the host", async () => {
  // The server answers slowly, as when its journal is: it checks a new host id against the sessions stored in PostgreSQL.
  await using pg = await startPostgres();
  const proxy = faultProxy(pg.url.replace("postgres:", "http:"));
  const journal = new URL(pg.url);
  journal.port = new URL(proxy.url).port;
  const server = await serveBrain({ url: journal.href, serverToken: "operator", pingIntervalMs: 300 });
  try {
    const port = Number(new URL(server.url).port);
    const headers = { authorization: "Bearer app-token", "brain-server-token": "operator" };
    proxy.delay(200);
    await Promise.all(
      Array.from({ length: 200 }, (_, i) => tornUpgrade(port, `/v1/host?host=app&instance=ghost-${i}`, headers)),
    );
    await reaches(() => pendingUpgrades(server), (n) => n > 0, "the torn upgrades reaching the server");
    proxy.heal();
    // The application's own instance is not refused host_in_use by an instance that never arrived.
    await using brain = new Brain({ url: server.url, serverToken: "operator", token: "app-token", host: "app" });
    assert.deepEqual(await brain.sessions.list(), []);
    assert.equal(server.connections, 1, "only the socket that opened counts as a connection");
    await reaches(() => pendingUpgrades(server), (n) => n === 0, "the torn upgrades being forgotten");
  } finally {
    await withDeadline(server.shutdown(), "the shutdown of a server that saw torn upgrades");
    await proxy.close();
  }
});

Deno.test("PendingUpgrades keeps at most its cap of torn upgrades over real sockets, then cannot be settled", async () => {
  const pending = new PendingUpgrades(60_000, 10);
  const seen = Promise.withResolvers<void>();
  let upgrades = 0;
  const stop = new AbortController();
  const http = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {}, signal: stop.signal },
    async (request) => {
      // The answer comes after the client has left.
      await new Promise((resolve) => setTimeout(resolve, 20));
      const { socket, response } = Deno.upgradeWebSocket(request);
      pending.track(socket);
      if (++upgrades === 50) seen.resolve();
      return response;
    },
  );
  try {
    await Promise.all(Array.from({ length: 50 }, () => tornUpgrade(http.addr.port, "/", {})));
    await withDeadline(seen.promise, "50 torn upgrades");
    assert.equal(pending.size, 10);
    assert.equal(pending.settled, false, "a torn upgrade was given up: a graceful shutdown would hang");
  } finally {
    pending.close();
    // A graceful shutdown would wait on the torn upgrades forever.
    stop.abort();
    await http.finished;
  }
});
