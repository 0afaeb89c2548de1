import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type HostConnectionEvent, tool } from "../../mod.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { hasCode } from "../_support/has_code.ts";
import { PostgresJournal } from "../../src/journal/postgres.ts";
import { startPostgres } from "../_support/postgres.ts";
import { journalRecords, until } from "../_support/until.ts";
import { faultProxy } from "../host/fault_proxy.ts";
import { withDeadline } from "../_support/deadline.ts";
import { journalViolations } from "./invariants.ts";

/** `url` with its port replaced by the proxy's. */
function through(url: string, proxy: { url: string }): string {
  const target = new URL(url);
  target.port = new URL(proxy.url).port;
  return target.href;
}

Deno.test("PostgresJournal: a follower whose LISTEN connection dropped sees a commit made while it was down", async () => {
  await using pg = await startPostgres();
  const proxy = faultProxy(pg.url.replace("postgres:", "http:"));
  const writer = await PostgresJournal.open(pg.url);
  const follower = await PostgresJournal.open(through(pg.url, proxy));
  try {
    await writer.createSession({ id: "s", createdAt: Date.now(), tools: [] });
    const tick = (n: number) => writer.append("s", [{ kind: "tool_event", call: 0, event: "tick", data: n }]);
    const followed = until(journalRecords(follower, "s"), (records) => records.length === 2, {
      what: "the commit made while the follower's link was down",
      timeoutMs: 15_000,
    });
    await tick(1);
    await until(journalRecords(follower, "s"), (records) => records.length === 1, "the first commit");
    // The follower's connections drop and cannot come back while the second commit's NOTIFY is sent.
    proxy.refuse();
    proxy.cut();
    await tick(2);
    proxy.heal();
    const records = await followed;
    assert.deepEqual(records.map((record) => record.sequence), [1, 2]);
  } finally {
    await follower.close();
    await writer.close();
    await proxy.close();
  }
});

Deno.test("a Brain on a PostgreSQL that stops answering: its caller settles by the deadline + 2 s, and close() returns", async () => {
  await using pg = await startPostgres();
  const proxy = faultProxy(pg.url.replace("postgres:", "http:"));
  const brain = await Brain.open({ url: through(pg.url, proxy), leaseMs: 60_000 });
  let closed = false;
  try {
    const dispatched = Promise.withResolvers<void>();
    const waits = tool({
      name: "waits",
      description: "Waits for its end.",
      input: z.object({}),
      run: (_input, ctx) => {
        dispatched.resolve();
        return new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve(undefined)));
      },
    });
    const session = await brain.sessions.create({ tools: [waits()] });
    const deadline = Date.now() + 1_000;
    const ended = session.call("waits", {}, { deadline });
    await dispatched.promise;
    // Every packet to the database is dropped from now on: the deadline's terminal commit never returns.
    proxy.blackhole();
    await assert.rejects(ended, hasCode("storage_unavailable"));
    assert.ok(Date.now() <= deadline + 2_000, `the caller settled ${Date.now() - deadline} ms after its deadline`);
    await brain.close();
    closed = true;
  } finally {
    proxy.heal();
    proxy.cut();
    if (!closed) await brain.close();
    await proxy.close();
  }
});

Deno.test("a host connecting while the server's PostgreSQL is unreachable is told connection_lost, not unauthorized, and attaches once it is back", async () => {
  await using pg = await startPostgres();
  const proxy = faultProxy(pg.url.replace("postgres:", "http:"));
  const server = await serveBrain({ url: through(pg.url, proxy), serverToken: "operator" });
  proxy.refuse();
  proxy.cut();
  const events: HostConnectionEvent[] = [];
  const failed = Promise.withResolvers<HostConnectionEvent>();
  const brain = new Brain({
    url: server.url,
    serverToken: "operator",
    token: "t",
    host: "h",
    pingIntervalMs: 500,
    maxReconnectDelayMs: 100,
    onConnection: (event) => {
      events.push(event);
      if (event.type === "failed") failed.resolve(event);
    },
  });
  try {
    // A new host id is checked against the hosts the journal's sessions name, which cannot be read now.
    const refused = await failed.promise;
    assert.equal(refused.error?.code, "connection_lost", `the first refusal said ${refused.error?.message}`);
    proxy.heal();
    let listed: unknown;
    for (let attempt = 0; attempt < 100 && listed === undefined; attempt++) {
      listed = await brain.sessions.list().catch(() => undefined);
      if (listed === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.deepEqual(listed, []);
    assert.ok(!events.some((event) => event.error?.code === "unauthorized"), "no attempt was refused unauthorized");
  } finally {
    await brain.close();
    await server.shutdown();
    await proxy.close();
  }
});

Deno.test("a call and a start begun while the Brain's PostgreSQL does not answer settle storage_unavailable by their deadline + 2 s, are never dispatched, and close() returns", async () => {
  await using pg = await startPostgres();
  const proxy = faultProxy(pg.url.replace("postgres:", "http:"));
  const brain = await Brain.open({ url: through(pg.url, proxy), leaseMs: 60_000 });
  let closed = false;
  let dispatched = 0;
  try {
    const counted = tool({
      name: "counted",
      description: "Counts its dispatches.",
      input: z.object({}),
      run: (_input, ctx) => (dispatched++, ctx.finish(dispatched)),
    });
    const session = await brain.sessions.create({ tools: [counted()] });
    assert.equal((await session.call("counted", {})).cause, "finish");
    // Every packet to the database is dropped from now on: a call's intent commit never returns.
    proxy.blackhole();
    for (const how of ["call", "start"] as const) {
      const deadline = Date.now() + 500;
      const ended = how === "call"
        ? session.call("counted", {}, { deadline })
        : session.start("counted", {}, { deadline }).then((call) => call.ended);
      await assert.rejects(withDeadline(ended, `the ${how} to settle`, 2_500), hasCode("storage_unavailable"));
      assert.ok(Date.now() <= deadline + 2_000, `the ${how} settled ${Date.now() - deadline} ms after its deadline`);
    }
    await brain.close();
    closed = true;
    assert.equal(dispatched, 1, "only the call before the outage was dispatched");
  } finally {
    proxy.heal();
    proxy.cut();
    if (!closed) await brain.close();
    await proxy.close();
  }
});

Deno.test("a Brain whose PostgreSQL restarts mid-call for longer than its lease: what is asked meanwhile fails storage_unavailable at once and is never dispatched, the open call finishes as soon as it is back, and a follower sees every record once, in order", async () => {
  await using pg = await startPostgres();
  await using brain = await Brain.open({ url: pg.url, leaseMs: 500 });
  const release = Promise.withResolvers<void>();
  const holding = Promise.withResolvers<void>();
  const dispatched: string[] = [];
  const hold = tool({
    name: "hold",
    description: "Finishes once the test lets it.",
    input: z.object({}),
    run: async (_input, ctx) => {
      dispatched.push("hold");
      holding.resolve();
      await release.promise;
      return ctx.finish("held");
    },
  });
  const quick = tool({
    name: "quick",
    description: "Finishes at once.",
    input: z.object({}),
    run: (_input, ctx) => (dispatched.push("quick"), ctx.finish("quick")),
  });
  const session = await brain.sessions.create({ id: "restarted", tools: [hold(), quick()] });
  const stop = new AbortController();
  const seen: number[] = [];
  let caughtUp = Promise.withResolvers<void>();
  const following = (async () => {
    for await (const record of session.records({ signal: stop.signal })) {
      seen.push(record.sequence);
      caughtUp.resolve();
    }
  })();
  assert.equal((await session.call("quick", {})).cause, "finish");
  const held = session.call("hold", {});
  await holding.promise;
  await pg.restart(async () => {
    const deadline = Date.now() + 1_000;
    await assert.rejects(session.call("quick", {}, { deadline }), hasCode("storage_unavailable"));
    assert.ok(Date.now() <= deadline + 2_000, `the call settled ${Date.now() - deadline} ms after its deadline`);
    // Many reads at once fail every connection of the pool, round after round, while the owner's renewals fail
    // past its lease: it must keep its session with the same token.
    for (let round = 0; round < 3; round++) {
      const reads = Array.from({ length: 12 }, () => assert.rejects(session.read(), hasCode("storage_unavailable")));
      await withDeadline(Promise.all(reads), `round ${round} of reads to fail while the database is down`);
    }
  });
  release.resolve();
  // Back: the pool connects again at once, not after a backoff grown through the outage.
  assert.deepEqual((await withDeadline(held, "the held call to end after the restart", 3_000)).outcome, {
    status: "ok",
    value: "held",
  });
  assert.deepEqual((await session.call("quick", {}, { deadline: Date.now() + 3_000 })).outcome, {
    status: "ok",
    value: "quick",
  });
  const records = await session.read();
  while (seen.length < records.length) {
    await withDeadline(caughtUp.promise, `the follower to see record ${seen.length + 1}`);
    caughtUp = Promise.withResolvers();
  }
  stop.abort();
  await following;
  assert.deepEqual(seen, records.map((record) => record.sequence), "the follower saw every record once, in order");
  assert.deepEqual(journalViolations(records), []);
  assert.deepEqual(dispatched, ["quick", "hold", "quick"], "the call begun while it was down was never dispatched");
});
