import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainError, tool } from "../../mod.ts";
import type { HostConnectionEvent } from "../../src/host/client/connection.ts";
import type { Journal } from "../../src/journal/journal.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { PostgresJournal } from "../../src/journal/postgres.ts";
import { startPostgres } from "../_support/postgres.ts";
import { scratchDir } from "../scratch.ts";
import { type Child, spawnDeno } from "./child.ts";

const LEASE_MS = 1_000;
/** The permissions of `deno task serve`, with the network narrowed to loopback as in deno.json. */
const SERVE_PERMISSIONS = [
  "--allow-net=127.0.0.1",
  "--allow-env=BRAIN_PORT,BRAIN_PATH,BRAIN_MODEL_URL,BRAIN_MODEL,BRAIN_MODEL_KEY,BRAIN_SERVER_TOKEN,BRAIN_HOST_TOKENS,BRAIN_LEASE_MS,BRAIN_JOURNAL,PG*",
  "--allow-read=.tmp",
  "--allow-write=.tmp",
];
const dir = scratchDir("cluster_test");

async function listening(server: Child): Promise<string> {
  const url = /^Brain listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(await server.line() ?? "")?.[1];
  assert.ok(url, "the server printed its URL");
  return url;
}

/** Three `deno task serve` processes over one journal, stopped (those still alive) when disposed. */
async function cluster(journal: string): Promise<{ urls: string[]; servers: Child[] } & AsyncDisposable> {
  const servers = [0, 1, 2].map(() =>
    spawnDeno(
      "src/host/server/serve.ts",
      ["--port", "0", "--journal", journal, "--lease-ms", `${LEASE_MS}`],
      SERVE_PERMISSIONS,
      { BRAIN_SERVER_TOKEN: "operator-secret" },
    )
  );
  const stop = async () => {
    for (const server of servers) {
      try {
        server.process.kill("SIGTERM");
      } catch {
        // Killed by the test already.
      }
      await server.process.status;
    }
  };
  try {
    return { urls: await Promise.all(servers.map(listening)), servers, [Symbol.asyncDispose]: stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

const quick = tool({
  name: "quick",
  description: "Finishes at once.",
  input: z.object({}),
  run: (_input, ctx) => ctx.finish("quick"),
});

/** A Tool that holds until its signal aborts, telling the test when it started and why it stopped. */
function holder() {
  const invocations: number[] = [];
  const started = Promise.withResolvers<void>();
  const stopped = Promise.withResolvers<unknown>();
  const hold = tool({
    name: "hold",
    description: "Holds until its signal aborts.",
    input: z.object({}),
    run: async (_input, ctx) => {
      invocations.push(ctx.sequence);
      started.resolve();
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      stopped.resolve(ctx.signal.reason);
    },
  });
  return { hold, invocations, started, stopped };
}

/** Polls the journal's heartbeats until `urls` are exactly the live nodes' URLs (or the deadline passes). */
async function liveNodes(journal: Journal, urls: string[], deadline: number): Promise<string[]> {
  let seen: string[] = [];
  while (Date.now() < deadline) {
    seen = (await journal.nodes()).map((beat) => beat.url).sort();
    if (JSON.stringify(seen) === JSON.stringify(urls.toSorted())) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return seen;
}

async function killTheOwner(store: string, journal: Journal): Promise<void> {
  await using servers = await cluster(store);
  const [first, ...others] = servers.urls;
  assert.deepEqual(await liveNodes(journal, servers.urls, Date.now() + 5_000), servers.urls.toSorted());
  const { hold, invocations, started, stopped } = holder();
  const brain = new Brain({
    url: first,
    cluster: others,
    token: "cluster-token",
    host: "app",
    serverToken: "operator-secret",
  });
  try {
    const session = await brain.sessions.create({ id: "clustered", tools: [hold(), quick()] });
    const call = await session.start("hold", {});
    await started.promise;
    servers.servers[0].process.kill("SIGKILL");
    const killedAt = Date.now();
    await servers.servers[0].process.status;
    assert.equal((await stopped.promise as BrainError).code, "connection_lost");

    // The host moves to a survivor, which takes the session over as the dead owner's lease ends: its call ends
    // unknown, once, within a second of that lease.
    const end = await call.ended;
    assert.deepEqual([end.cause, end.outcome.status], ["unknown", "unknown"]);
    const records = await journal.read("clustered");
    const terminals = records.filter((record) => record.kind === "tool_call_finished" && record.call === call.sequence);
    assert.equal(terminals.length, 1);
    const takeoverMs = terminals[0].at - killedAt;
    assert.ok(takeoverMs <= LEASE_MS + 1_000, `a survivor took over ${takeoverMs} ms after the kill`);

    assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
    assert.deepEqual(invocations, [call.sequence], "the lost call was never dispatched again");
    // The dead server's heartbeat ages out; the survivors' stay.
    assert.deepEqual(await liveNodes(journal, others, Date.now() + 3 * LEASE_MS), others.toSorted());
  } finally {
    await brain.close();
  }
}

Deno.test("a cluster of 3 servers on one KV file: SIGKILL the owner mid-call, a survivor owns the session within lease + 1 s", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const journal = await KvJournal.open(path);
  try {
    await killTheOwner(path, journal);
  } finally {
    await journal.close();
  }
});

Deno.test("a cluster of 3 servers on one PostgreSQL: SIGKILL the owner mid-call, a survivor owns the session within lease + 1 s", async () => {
  await using pg = await startPostgres();
  const journal = await PostgresJournal.open(pg.url);
  try {
    await killTheOwner(pg.url, journal);
  } finally {
    await journal.close();
  }
});

Deno.test("a cluster on one KV file routes a host to the server that owns its session, from the journal alone", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const journal = await KvJournal.open(path);
  try {
    await using servers = await cluster(path);
    const [owner, , elsewhere] = servers.urls;
    const options = { token: "routed-token", host: "app", serverToken: "operator-secret" };
    const first = new Brain({ url: owner, ...options });
    try {
      await first.sessions.create({ id: "routed", tools: [quick()] });
      // Another instance of the host knows only the third server, which does not own the session: it is sent to
      // the owner's URL, which it never was given, and takes the host's connection over there.
      const events: HostConnectionEvent[] = [];
      const second = new Brain({
        url: elsewhere,
        takeover: true,
        onConnection: (event) => events.push(event),
        ...options,
      });
      try {
        const session = await second.sessions.get("routed", { tools: [quick()] });
        assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
        const moved = events.find((event) => event.type === "moved");
        assert.deepEqual([moved?.url, moved?.to], [elsewhere, owner]);
        assert.deepEqual(events.filter((event) => event.type === "attached").map((event) => event.url), [
          elsewhere,
          owner,
        ]);
        const health = await (await fetch(`${owner}/v1/health`)).json();
        assert.equal((await journal.holder("routed"))?.owner, health.node, "the session stayed with its owner");
      } finally {
        await second.close();
      }
    } finally {
      await first.close();
    }
  } finally {
    await journal.close();
  }
});
