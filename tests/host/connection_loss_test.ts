import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainError, type HostConnectionEvent, tool } from "../../mod.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { withDeadline } from "../_support/deadline.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { closing } from "../_support/closing.ts";
import { scratchDir } from "../_support/scratch.ts";

Deno.test("a socket dropped by the server ends the dispatched call unknown, aborts ctx.signal, and the host reconnects without replay", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  await using brain = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "drop-token",
    host: "dropped",
  });
  const invocations: number[] = [];
  const started = Promise.withResolvers<void>();
  const stopped = Promise.withResolvers<{ reason: unknown; emitAfter: unknown }>();
  const hold = tool({
    name: "hold",
    description: "Holds until its signal aborts, then tries to emit.",
    input: z.object({}),
    run: async (_input, ctx) => {
      invocations.push(ctx.sequence);
      await ctx.emit("holding", null);
      started.resolve();
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      const emitAfter = await ctx.emit("after_loss", null).then(() => "committed", (error) => error);
      stopped.resolve({ reason: ctx.signal.reason, emitAfter });
    },
  });
  const quick = tool({
    name: "quick",
    description: "Finishes at once.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish("quick"),
  });
  const session = await brain.sessions.create({ tools: [hold(), quick()] });
  const call = await session.start("hold", {});
  await started.promise;
  assert.equal(server.dropHost("dropped"), true);

  const end = await call.ended;
  assert.equal(end.cause, "unknown");
  assert.equal(end.outcome.status, "unknown");
  const { reason, emitAfter } = await stopped.promise;
  assert.equal((reason as BrainError).code, "connection_lost");
  assert.equal((emitAfter as BrainError).code, "connection_lost");

  const next = await session.call("quick", {});
  assert.deepEqual(next.outcome, { status: "ok", value: "quick" });
  assert.equal(server.connections, 2, "the same host reconnected once");
  assert.deepEqual(invocations, [call.sequence], "the lost call was never sent again");
  const records = await session.read();
  assert.deepEqual(
    records.filter((record) => "call" in record && record.call === call.sequence).map((record) => record.kind),
    ["tool_event", "tool_call_finished"],
  );
  assert.equal(records.filter((record) => record.kind === "tool_call_started").length, 2);
});

Deno.test("records() resumes after a reconnect without repeating or skipping a record", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  await using brain = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "follow-token",
    host: "follower",
  });
  const note = tool({
    name: "note",
    description: "Emits one event.",
    input: z.object({ n: z.number() }),
    run: async ({ n }, ctx) => {
      await ctx.emit("note", { n });
      return ctx.finish(n);
    },
  });
  const session = await brain.sessions.create({ tools: [note()] });
  const controller = new AbortController();
  const sequences: number[] = [];
  const firstSeen = Promise.withResolvers<void>();
  const following = (async () => {
    for await (const record of session.records({ signal: controller.signal })) {
      sequences.push(record.sequence);
      if (record.kind === "tool_call_finished") firstSeen.resolve();
      if (sequences.length === 8) controller.abort();
    }
  })();
  following.catch(() => {});
  await session.call("note", { n: 1 });
  await firstSeen.promise;
  assert.equal(server.dropHost("follower"), true);
  // An idempotent request is resent after the reconnect, so its answer means the host is back.
  await session.read();
  assert.equal(server.connections, 2);
  await session.call("note", { n: 2 });
  await following;
  assert.deepEqual(sequences, [1, 2, 3, 4, 5, 6, 7, 8]);
});

Deno.test("a call started on a socket that is dropping fails connection_lost and is never sent again", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  await using brain = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "race-token",
    host: "racer",
  });
  let runs = 0;
  const counted = tool({
    name: "counted",
    description: "Counts its runs.",
    input: z.object({}),
    run: (_input, ctx) => {
      runs++;
      return ctx.finish(runs);
    },
  });
  const session = await brain.sessions.create({ tools: [counted()] });
  assert.equal(server.dropHost("racer"), true);
  await assert.rejects(session.start("counted", {}), hasCode("connection_lost"));
  await session.read();
  assert.equal(runs, 0, "the lost start was not resent after the reconnect");
  const records = await session.read();
  const started = records.filter((record) => record.kind === "tool_call_started");
  assert.ok(started.length <= 1);
  for (const record of records) {
    if (record.kind === "tool_call_finished") {
      assert.equal(record.outcome.status === "error" && record.outcome.error.code, "host_disconnected");
    }
  }
  assert.deepEqual((await session.call("counted", {})).outcome, { status: "ok", value: 1 });
});

Deno.test("a Tool that returned without finishing stays open until connection loss ends it unknown", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  await using brain = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "forget-token",
    host: "forgetful",
  });
  const aborted = Promise.withResolvers<unknown>();
  const forgets = tool({
    name: "forgets",
    description: "Returns a result and never finishes.",
    input: z.object({}),
    run: (_input, ctx) => {
      ctx.signal.addEventListener("abort", () => aborted.resolve(ctx.signal.reason), { once: true });
      return { partial: true };
    },
  });
  const session = await brain.sessions.create({ tools: [forgets()] });
  const call = await session.start("forgets", {}, { deadline: Date.now() + 10_000 });
  for await (const record of session.records({ signal: AbortSignal.timeout(10_000) })) {
    if (record.kind === "tool_returned") break;
  }
  assert.equal(server.dropHost("forgetful"), true);
  const end = await call.ended;
  assert.deepEqual(
    [end.cause, end.outcome.status],
    ["unknown", "unknown"],
    "a published result is not a reliable end",
  );
  assert.equal((await aborted.promise as BrainError).code, "connection_lost");
  const kinds = (await session.read()).map((record) => record.kind);
  assert.deepEqual(kinds, ["tool_call_started", "tool_result", "tool_returned", "tool_call_finished"]);
});

Deno.test("a second instance of a connected host is refused host_in_use and told so; takeover replaces the first", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  const options = { url: server.url, serverToken: "operator-secret", token: "twin-token", host: "twin" };
  const quick = tool({
    name: "quick",
    description: "Finishes at once.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish("quick"),
  });
  await using first = new Brain(options);
  const session = await first.sessions.create({ tools: [quick()] });
  const refused = Promise.withResolvers<HostConnectionEvent>();
  await using second = new Brain({
    ...options,
    onConnection: (event) => event.type === "failed" && refused.resolve(event),
  });
  await assert.rejects(second.sessions.list(), hasCode("host_in_use"));
  assert.equal((await refused.promise).error?.code, "host_in_use");
  assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
  assert.equal(server.connections, 1, "the first instance was never evicted");

  const lost = Promise.withResolvers<HostConnectionEvent>();
  await using third = new Brain({
    ...options,
    takeover: true,
    onConnection: (event) => event.type === "attached" && lost.resolve(event),
  });
  const meta = await server.journal.getSession(hostSessionKey("twin", session.id));
  assert.deepEqual(await third.sessions.list(), [{ ...meta, id: session.id }]);
  await lost.promise;
  assert.equal(server.connections, 2);
});

Deno.test("a handle the server cannot reopen after a reconnect is told through onConnection, and its calls fail session_closed at once", async () => {
  const path = `${scratchDir("connection_loss")}/brain.kv`;
  // Servers go last: the Brain closes while the server it talks to still runs.
  await using servers = new AsyncDisposableStack();
  const first = await serveBrain({ serverToken: "operator-secret", path });
  const { url } = first;
  const closed = Promise.withResolvers<HostConnectionEvent>();
  const events: HostConnectionEvent[] = [];
  await using brain = new Brain({
    url,
    serverToken: "operator-secret",
    token: "gone-token",
    host: "forgotten",
    maxReconnectDelayMs: 100,
    onConnection: (event) => {
      events.push(event);
      if (event.type === "session_closed") closed.resolve(event);
    },
  });
  const quick = tool({
    name: "quick",
    description: "Finishes at once.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish("quick"),
  });
  const gone = await brain.sessions.create({ tools: [quick()] });
  const kept = await brain.sessions.create({ tools: [quick()] });
  // While the server is down one session is deleted from its journal: the host cannot get it back on reconnect.
  await first.shutdown();
  {
    await using journal = closing(await KvJournal.open(path));
    await journal.deleteSession(hostSessionKey("forgotten", gone.id));
  }
  servers.use(await servedBrain({ serverToken: "operator-secret", path, port: Number(new URL(url).port) }));
  const event = await withDeadline(closed.promise, "the session_closed event");
  assert.deepEqual([event.session, event.url, event.error?.code], [gone.id, url, "session_closed"]);
  assert.equal((event.error?.cause as BrainError).code, "session_not_found");
  await assert.rejects(gone.start("quick", {}), hasCode("session_closed", /not reopened/));
  await assert.rejects(gone.call("quick", {}), hasCode("session_closed", /not reopened/));
  await assert.rejects(gone.send("hello"), hasCode("session_closed", /not reopened/));
  await gone.end();
  assert.deepEqual((await kept.call("quick", {})).outcome, { status: "ok", value: "quick" });
  assert.deepEqual(events.filter((event) => event.type === "session_closed"), [event], "the other handle was reopened");
});

Deno.test("a handle the server cannot reopen for a while (a limit) is asked for again, and serves once it can", async () => {
  const path = `${scratchDir("connection_loss")}/brain.kv`;
  await using servers = new AsyncDisposableStack();
  const first = await serveBrain({ serverToken: "operator-secret", path });
  const { url } = first;
  const events: HostConnectionEvent[] = [];
  await using brain = new Brain({
    url,
    serverToken: "operator-secret",
    token: "limited-token",
    host: "limited",
    maxReconnectDelayMs: 100,
    onConnection: (event) => events.push(event),
  });
  const quick = tool({
    name: "quick",
    description: "Finishes at once.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish("quick"),
  });
  const one = await brain.sessions.create({ tools: [quick()] });
  const two = await brain.sessions.create({ tools: [quick()] });
  // The server comes back allowing one handle per host: the second is refused limit_exceeded on reattach.
  await first.shutdown();
  servers.use(
    await servedBrain({
      serverToken: "operator-secret",
      path,
      port: Number(new URL(url).port),
      limits: { maxHandlesPerHost: 1 },
      maxEmittedBytes: 4_321,
    }),
  );
  assert.deepEqual((await one.call("quick", {})).outcome, { status: "ok", value: "quick" });
  assert.equal(one.activation().maxEmittedBytes, 4_321, "the reattached handle has the server's budgets now");
  await assert.rejects(two.call("quick", {}), hasCode("session_closed"));
  await one.end();
  // With the first handle gone there is room: the client asks again by itself and the second serves.
  let served: unknown;
  for (const giveUp = Date.now() + 5_000; served === undefined && Date.now() < giveUp;) {
    served = await two.call("quick", {}).then((end) => end.outcome, () => undefined);
  }
  assert.deepEqual(served, { status: "ok", value: "quick" });
  assert.equal(two.activation().maxEmittedBytes, 4_321, "the handle asked for again has them too");
  assert.equal(events.filter((event) => event.type === "session_closed").length, 0, "no handle was given up");
});

Deno.test("an onConnection callback that throws is reported, and the client still attaches, serves and reconnects", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  const reported: unknown[] = [];
  const report = (event: ErrorEvent) => {
    event.preventDefault();
    reported.push(event.error);
  };
  globalThis.addEventListener("error", report);
  try {
    const told: string[] = [];
    const reattached = Promise.withResolvers<void>();
    await using brain = new Brain({
      url: server.url,
      serverToken: "operator-secret",
      token: "throwing-token",
      host: "throwing",
      maxReconnectDelayMs: 100,
      onConnection: (event) => {
        told.push(event.type);
        if (told.filter((type) => type === "attached").length === 2) reattached.resolve();
        throw new Error(`the application's callback failed on ${event.type}`);
      },
    });
    const quick = tool({
      name: "quick",
      description: "Finishes at once.",
      input: z.object({}),
      run: (_input, ctx) => ctx.finish("quick"),
    });
    const session = await withDeadline(brain.sessions.create({ tools: [quick()] }), "the session");
    assert.equal(server.dropHost("throwing"), true);
    await withDeadline(reattached.promise, "the client to attach again");
    assert.deepEqual((await withDeadline(session.call("quick", {}), "a call after the drop")).outcome, {
      status: "ok",
      value: "quick",
    });
    assert.deepEqual(told, ["attached", "lost", "attached"]);
    assert.deepEqual(
      reported.map((error) => (error as Error).message),
      told.map((type) => `the application's callback failed on ${type}`),
    );
    assert.equal(server.connections, 2);
  } finally {
    globalThis.removeEventListener("error", report);
  }
});
