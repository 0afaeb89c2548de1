import assert from "node:assert/strict";
import { Brain, type BrainError } from "../../mod.ts";
import type { HostConnectionEvent } from "../../src/host/client/connection.ts";
import type { Journal } from "../../src/journal/journal.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { PostgresJournal } from "../../src/journal/postgres.ts";
import { closing } from "../_support/closing.ts";
import { startPostgres } from "../_support/postgres.ts";
import { scratchDir } from "../_support/scratch.ts";
import {
  SERVE_NET_ENV,
  SERVER_TOKEN,
  type ServerProcess,
  serverProcess,
  serveScript,
} from "../_support/server_process.ts";
import { faultProxy } from "../host/fault_proxy.ts";
import { heldCall } from "./fixtures/held_call.ts";
import { hostSessionKey } from "../../src/util/names.ts";

const LEASE_MS = 1_000;
const dir = scratchDir("cluster_test");

/** Three `deno task serve` processes over one journal (a KV path or a postgres:// URL), started together. */
async function threeServers(journal: string): Promise<ServerProcess[]> {
  const args = ["--port", "0", "--journal", journal, "--lease-ms", `${LEASE_MS}`];
  const started = await Promise.allSettled([0, 1, 2].map(() => serverProcess(args)));
  const servers = started.flatMap((result) => result.status === "fulfilled" ? [result.value] : []);
  const failed = started.find((result) => result.status === "rejected");
  if (!failed) return servers;
  for (const server of servers) await server[Symbol.asyncDispose]();
  throw failed.reason;
}

/**
 * The URLs of the nodes whose heartbeat the journal holds, once they are exactly `urls`, read again on each
 * heartbeat period until `deadline`; what it last saw otherwise.
 */
async function liveNodes(journal: Journal, urls: string[], deadline: number): Promise<string[]> {
  const wanted = JSON.stringify(urls.toSorted());
  for (;;) {
    const seen = (await journal.nodes()).map((beat) => beat.url).sort();
    if (JSON.stringify(seen) === wanted || Date.now() >= deadline) return seen;
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS / 3));
  }
}

async function killTheOwner(store: string, journal: Journal): Promise<void> {
  const [first, second, third] = await threeServers(store);
  await using _first = first;
  await using _second = second;
  await using _third = third;
  const urls = [first.url, second.url, third.url];
  assert.deepEqual(await liveNodes(journal, urls, Date.now() + 5_000), urls.toSorted(), "each server beats");
  const held = heldCall();
  await using brain = new Brain({
    url: first.url,
    cluster: [second.url, third.url],
    token: "cluster-token",
    host: "app",
    serverToken: SERVER_TOKEN,
  });
  const session = await brain.sessions.create({ id: "clustered", tools: held.tools });
  const call = await session.start("hold", {});
  await held.started;
  const killed = first.kill("SIGKILL");
  const killedAt = Date.now();
  await killed;
  assert.equal((await held.stopped as BrainError).code, "connection_lost");

  // The host moves to a survivor, which takes the session over as soon as the dead owner's lease ended: the call
  // ends unknown, once, within a second of that lease.
  const end = await call.ended;
  assert.deepEqual([end.cause, end.outcome.status], ["unknown", "unknown"]);
  const records = await journal.read(hostSessionKey("app", "clustered"));
  const terminals = records.filter((record) => record.kind === "tool_call_finished" && record.call === call.sequence);
  assert.equal(terminals.length, 1);
  const takeoverMs = terminals[0].at - killedAt;
  assert.ok(takeoverMs <= LEASE_MS + 1_000, `a survivor took over ${takeoverMs} ms after the kill`);

  assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
  assert.deepEqual(held.invocations, [call.sequence], "the lost call was never dispatched again");
  // The dead server's heartbeat ages out; the survivors' stay.
  const survivors = [second.url, third.url];
  assert.deepEqual(await liveNodes(journal, survivors, Date.now() + 3 * LEASE_MS), survivors.toSorted());
}

Deno.test("a cluster of 3 servers on one KV file: SIGKILL the owner mid-call, a survivor owns the session within lease + 1 s", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  await using journal = closing(await KvJournal.open(path));
  await killTheOwner(path, journal);
});

Deno.test("a cluster of 3 servers on one PostgreSQL: SIGKILL the owner mid-call, a survivor owns the session within lease + 1 s", async () => {
  await using pg = await startPostgres();
  await using journal = closing(await PostgresJournal.open(pg.url));
  await killTheOwner(pg.url, journal);
});

async function routeToTheOwner(store: string, journal: Journal): Promise<void> {
  const [owner, other, elsewhere] = await threeServers(store);
  await using _owner = owner;
  await using _other = other;
  await using _elsewhere = elsewhere;
  const options = { token: "routed-token", host: "app", serverToken: SERVER_TOKEN };
  await using first = new Brain({ url: owner.url, ...options });
  await first.sessions.create({ id: "routed", tools: heldCall().tools });
  // Another instance of the host knows only the third server, which does not own the session: it is sent to the
  // owner's URL, which it was never given, and takes the host's connection over there.
  const events: HostConnectionEvent[] = [];
  await using second = new Brain({
    url: elsewhere.url,
    takeover: true,
    onConnection: (event) => events.push(event),
    ...options,
  });
  const session = await second.sessions.get("routed", { tools: heldCall().tools });
  assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
  const moved = events.filter((event) => event.type === "moved");
  assert.deepEqual(moved.map((event) => [event.url, event.to]), [[elsewhere.url, owner.url]]);
  const attached = events.filter((event) => event.type === "attached").map((event) => event.url);
  assert.deepEqual(attached, [elsewhere.url, owner.url]);
  const health = await (await fetch(`${owner.url}/v1/health`)).json();
  assert.equal(
    (await journal.holder(hostSessionKey("app", "routed")))?.owner,
    health.node,
    "the session stayed with its owner",
  );
}

Deno.test("a cluster on one KV file sends a host to the server that owns its session, found in the journal alone", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  await using journal = closing(await KvJournal.open(path));
  await routeToTheOwner(path, journal);
});

Deno.test("a cluster on one PostgreSQL sends a host to the server that owns its session, found in the journal alone", async () => {
  await using pg = await startPostgres();
  await using journal = closing(await PostgresJournal.open(pg.url));
  await routeToTheOwner(pg.url, journal);
});

/** A loopback port nothing listens on right now. */
/** Ports free now, each held by a listener until `release`: what starts meanwhile (a proxy) cannot take them. */
function heldPorts(count: number): { ports: number[]; release(): void } {
  const listeners = Array.from({ length: count }, () => Deno.listen({ hostname: "127.0.0.1", port: 0 }));
  return {
    ports: listeners.map((listener) => (listener.addr as Deno.NetAddr).port),
    release: () => listeners.forEach((listener) => listener.close()),
  };
}

Deno.test("--advertise-url (or BRAIN_ADVERTISE_URL) is the URL a server beats into the journal, where hosts are sent", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  await using journal = closing(await KvJournal.open(path));
  // Each server is reached through a proxy of its own, as behind a load balancer: hosts must be sent to the proxy.
  const held = heldPorts(2);
  const [ownerPort, otherPort] = held.ports;
  const ownerProxy = faultProxy(`http://127.0.0.1:${ownerPort}`);
  await using _ownerProxy = { [Symbol.asyncDispose]: () => ownerProxy.close() };
  const otherProxy = faultProxy(`http://127.0.0.1:${otherPort}`);
  await using _otherProxy = { [Symbol.asyncDispose]: () => otherProxy.close() };
  held.release();
  const common = ["--journal", path, "--lease-ms", `${LEASE_MS}`];
  await using owner = await serverProcess(["--port", `${ownerPort}`, ...common, "--advertise-url", ownerProxy.url]);
  await using other = await serverProcess(["--port", `${otherPort}`, ...common], {
    env: { BRAIN_ADVERTISE_URL: otherProxy.url },
  });
  const advertised = [ownerProxy.url, otherProxy.url];
  assert.deepEqual(await liveNodes(journal, advertised, Date.now() + 5_000), advertised.toSorted());

  const options = { token: "advertised-token", host: "app", serverToken: SERVER_TOKEN };
  await using first = new Brain({ url: owner.url, ...options });
  await first.sessions.create({ id: "advertised", tools: heldCall().tools });
  const events: HostConnectionEvent[] = [];
  await using second = new Brain({
    url: other.url,
    takeover: true,
    onConnection: (event) => events.push(event),
    ...options,
  });
  const session = await second.sessions.get("advertised", { tools: heldCall().tools });
  assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
  const moved = events.filter((event) => event.type === "moved");
  assert.deepEqual(moved.map((event) => [event.url, event.to]), [[other.url, ownerProxy.url]]);
  const attached = events.filter((event) => event.type === "attached").map((event) => event.url);
  assert.deepEqual(attached, [other.url, ownerProxy.url], "the host reached the owner through its advertised URL");
});

Deno.test("a bad --advertise-url or BRAIN_ADVERTISE_URL, or a misspelt flag, exits 2 before listening", async () => {
  const bad = [
    { args: ["--advertise-url", "ftp://127.0.0.1:8787"] },
    { args: ["--advertise-url", "127.0.0.1:8787"] },
    { args: ["--advertise-url", "http://"] },
    { args: ["--advertise-url", ""] },
    { args: [], env: { BRAIN_ADVERTISE_URL: "http://brain host:8787" } },
    { args: ["--advertise", "http://127.0.0.1:8787"] },
  ];
  for (const { args, env } of bad) {
    await using refused = serveScript(["--port", "0", ...args], { permissions: SERVE_NET_ENV, env });
    assert.equal(await refused.line(), undefined, `${JSON.stringify(args)} ${JSON.stringify(env)}: it never listened`);
    assert.equal((await refused.process.status).code, 2, `${JSON.stringify(args)} ${JSON.stringify(env)}`);
  }
});
