import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainError, tool } from "../../mod.ts";
import type { JournalRecord, RecordBody } from "../../src/journal/records.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { hashToken } from "../../src/embedded/host_token.ts";
import { ORPHANED_MESSAGE } from "../../src/embedded/recover.ts";
import { scratchDir } from "../_support/scratch.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { journalRecords, until } from "../_support/until.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { FlakyJournal } from "../_support/flaky_journal.ts";
import type { AcquireOptions, AppendOptions, Lease } from "../../src/journal/lease.ts";

const dir = scratchDir("ownership_test");

/** A Tool that holds until `release` resolves, then finishes with its input. */
function held() {
  const release = Promise.withResolvers<void>();
  const started = Promise.withResolvers<void>();
  const declared = tool({
    name: "hold",
    description: "Holds until released.",
    input: z.object({ n: z.number() }),
    run: async ({ n }, ctx) => {
      started.resolve();
      await ctx.emit("holding", n);
      await release.promise;
      return ctx.finish(n);
    },
  });
  return { release, started, placed: () => declared() };
}

const terminals = (records: JournalRecord[], call: number) =>
  records.filter((record) => record.kind === "tool_call_finished" && record.call === call);

Deno.test("a second Brain on one KV file reads a live session without ending its calls, and cannot take it", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const hold = held();
  await using first = await Brain.open({ path });
  const session = await first.sessions.create({ id: "live", tools: [hold.placed()] });
  const call = await session.start("hold", { n: 7 });
  await hold.started.promise;
  await using second = await Brain.open({ path });
  const reader = await second.sessions.get("live");
  assert.equal(terminals(await reader.read(), call.sequence).length, 0, "the live call is still open");
  assert.deepEqual((await second.sessions.list()).map((meta) => meta.id), ["live"]);
  await assert.rejects(second.sessions.get("live", { tools: [hold.placed()] }), hasCode("session_owned"));
  await assert.rejects(
    second.sessions.get("live", { tools: [hold.placed()], waitMs: 50 }),
    hasCode("session_owned"),
  );
  hold.release.resolve();
  const end = await call.ended;
  assert.deepEqual([end.cause, end.outcome], ["finish", { status: "ok", value: 7 }]);
  const records = await reader.read();
  assert.equal(terminals(records, call.sequence).length, 1);
  assert.equal(records.at(-1)?.kind, "tool_call_finished", "nothing follows the terminal record");
});

Deno.test("a closed Brain releases its sessions: the next Brain takes them over at once", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const hold = held();
  const first = await Brain.open({ path });
  const session = await first.sessions.create({ id: "s", tools: [hold.placed()] });
  const call = await session.start("hold", { n: 1 });
  await hold.started.promise;
  const contender = await Brain.open({ path });
  await assert.rejects(contender.sessions.get("s", { tools: [hold.placed()] }), hasCode("session_owned"));
  await contender.close();
  const firstEnd = first.close();
  hold.release.resolve();
  await firstEnd;
  assert.equal((await call.ended).cause, "cancelled");
  const second = await Brain.open({ path });
  const again = await second.sessions.get("s", { tools: [hold.placed()] });
  const next = await again.start("hold", { n: 2 });
  assert.deepEqual((await next.ended).outcome, { status: "ok", value: 2 });
  await second.close();
});

Deno.test("a waiting get takes the session once its owner's lease lapses, ending the owner's calls unknown once", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  // A stopped owner: its lease is in the journal, its process renews it no more.
  const journal = await KvJournal.open(path);
  const { placed } = { placed: held().placed() };
  await journal.createSession({ id: "s", createdAt: Date.now(), tools: [placed.advertised] });
  const lease = await journal.acquire("s", { owner: "gone", ttlMs: 300 });
  const [started] = await journal.append("s", [
    { kind: "tool_call_started", tool: "hold", input: { n: 1 }, activation: "a" },
  ], { lease });
  await journal.close();
  const brain = await Brain.open({ path });
  try {
    await assert.rejects(brain.sessions.get("s", { tools: [held().placed()] }), hasCode("session_owned"));
    const session = await brain.sessions.get("s", { tools: [held().placed()], waitMs: 5_000 });
    const records = await session.read();
    assert.deepEqual(
      terminals(records, started.sequence).map((record) => record.kind === "tool_call_finished" && record.outcome),
      [{ status: "unknown", message: ORPHANED_MESSAGE }],
    );
  } finally {
    await brain.close();
  }
  const stale = await KvJournal.open(path);
  try {
    await assert.rejects(
      stale.append("s", [{ kind: "tool_event", call: started.sequence, event: "late", data: null }], { lease }),
      hasCode("fenced"),
    );
  } finally {
    await stale.close();
  }
});

Deno.test("a terminal commit that failed for a moment is retried: the caller settles with one terminal record", async () => {
  const journal = await FlakyJournal.at(`${dir}/${crypto.randomUUID()}.kv`);
  await using brain = new Brain({ journal });
  const hold = held();
  const session = await brain.sessions.create({ tools: [hold.placed()] });
  const call = await session.start("hold", { n: 3 });
  await hold.started.promise;
  journal.failures = 2;
  hold.release.resolve();
  const end = await call.ended;
  assert.deepEqual([end.cause, end.outcome], ["finish", { status: "ok", value: 3 }]);
  assert.equal(terminals(await session.read(), call.sequence).length, 1);
});

Deno.test("a terminal commit that keeps failing rejects the caller; once the store is back the call ends unknown", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const journal = await FlakyJournal.at(path);
  await using brain = new Brain({ journal });
  const hold = held();
  const session = await brain.sessions.create({ id: "s", tools: [hold.placed()] });
  const call = await session.start("hold", { n: 4 });
  await hold.started.promise;
  journal.failures = 100;
  hold.release.resolve();
  await assert.rejects(call.ended, hasCode("storage_unavailable"));
  await assert.rejects(session.call("hold", { n: 5 }), hasCode("session_closed"), "the handle gave the session up");
  journal.failures = 0;
  let terminal: JournalRecord | undefined;
  for await (const record of journal.subscribe("s", { from: call.sequence })) {
    if (record.kind === "tool_call_finished" && record.call === call.sequence) {
      terminal = record;
      break;
    }
  }
  assert.ok(terminal?.kind === "tool_call_finished" && terminal.cause === "unknown");
  const again = await brain.sessions.get("s", { tools: [held().placed()] });
  assert.equal(terminals(await again.read(), call.sequence).length, 1);
});

/** A KV journal that holds the answer of the next lease it takes until `answer` opens, after `taken` resolves. */
class HeldLeaseJournal extends KvJournal {
  taken = Promise.withResolvers<void>();
  answer = Promise.withResolvers<void>();
  override async acquire(sessionId: string, options: AcquireOptions): Promise<Lease> {
    const lease = await super.acquire(sessionId, options);
    this.taken.resolve();
    await this.answer.promise;
    return lease;
  }
}

Deno.test("close() while a session is being created: the creation fails brain_closed, and the lease it took is given back before the journal closes", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const journal = new HeldLeaseJournal(await Deno.openKv(path), path);
  const brain = new Brain({ journal });
  const creating = brain.sessions.create({ id: "s", tools: [held().placed()] });
  creating.catch(() => {});
  await journal.taken.promise;
  const closing = brain.close();
  journal.answer.resolve();
  await assert.rejects(creating, hasCode("brain_closed"));
  await closing;
  await using next = await Brain.open({ path });
  const taken = await next.sessions.get("s", { tools: [held().placed()] });
  assert.equal((await taken.read()).length, 0);
});

/** A KV journal whose appends to session `stuck` never answer once `stalled`, as a store holding one commit would. */
class StalledSessionJournal extends KvJournal {
  stalled = false;
  override append(sessionId: string, bodies: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]> {
    if (this.stalled && sessionId === "stuck") return new Promise(() => {});
    return super.append(sessionId, bodies, options);
  }
}

Deno.test("close() while the store holds one session's end gives every lease up: the next Brain takes each session at once and ends what is open once", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const journal = new StalledSessionJournal(await Deno.openKv(path), path);
  const brain = new Brain({ journal, leaseMs: 60_000 });
  const hold = held();
  const stuck = await brain.sessions.create({ id: "stuck", tools: [hold.placed()] });
  await brain.sessions.create({ id: "fine", tools: [hold.placed()] });
  const call = await stuck.start("hold", { n: 1 });
  await hold.started.promise;
  journal.stalled = true;
  await brain.close();
  await using next = await Brain.open({ path });
  await next.sessions.get("fine", { tools: [held().placed()] });
  const taken = await next.sessions.get("stuck", { tools: [held().placed()] });
  const ends = terminals(await taken.read(), call.sequence);
  assert.deepEqual(ends.map((record) => record.kind === "tool_call_finished" && record.cause), ["unknown"]);
});

Deno.test("close() while a refused terminal commit waits to be tried again returns at once, leaving no timer; the next Brain ends the call unknown once", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const journal = await FlakyJournal.at(path);
  const brain = new Brain({ journal });
  const hold = held();
  const session = await brain.sessions.create({ id: "s", tools: [hold.placed()] });
  const call = await session.start("hold", { n: 4 });
  await hold.started.promise;
  journal.failures = 100;
  hold.release.resolve();
  // Tried three times: the next try waits a second.
  await journal.failed(3);
  const started = performance.now();
  await brain.close();
  const took = performance.now() - started;
  assert.ok(took < 1_000, `close() took ${Math.round(took)} ms`);
  await assert.rejects(call.ended, hasCode("storage_unavailable"));
  await using next = await Brain.open({ path });
  const taken = await next.sessions.get("s", { tools: [held().placed()] });
  const ends = terminals(await taken.read(), call.sequence);
  assert.deepEqual(ends.map((record) => record.kind === "tool_call_finished" && record.cause), ["unknown"]);
});

Deno.test("a deadline's or a signal's end that the store refuses for good rejects the caller's end and nothing else", async () => {
  const journal = await FlakyJournal.at(`${dir}/${crypto.randomUUID()}.kv`);
  journal.code = "journal_closed";
  journal.failures = 100;
  await using brain = new Brain({ journal });
  const hold = held();
  const session = await brain.sessions.create({ tools: [hold.placed()] });
  // Neither the deadline's timer nor the signal's listener leaves a rejection unhandled: the test would fail on one.
  const timed = await session.start("hold", { n: 7 }, { deadline: Date.now() + 50 });
  await assert.rejects(timed.ended, hasCode("journal_closed"));
  const again = await brain.sessions.create({ tools: [hold.placed()] });
  const signal = new AbortController();
  const cancelled = await again.start("hold", { n: 8 }, { signal: signal.signal });
  await hold.started.promise;
  signal.abort();
  await assert.rejects(cancelled.ended, hasCode("journal_closed"));
  hold.release.resolve();
});

Deno.test("a session another Brain deletes: its open calls settle fenced, caused by the deletion, when a Tool's own commit found it gone first", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const go = Promise.withResolvers<void>();
  const emitted = Promise.withResolvers<unknown>();
  const gated = tool({
    name: "gated",
    description: "Emits once told to.",
    input: z.object({}),
    run: async (_input, ctx) => {
      await go.promise;
      await ctx.emit("after", 1).then(() => emitted.resolve("committed"), emitted.resolve);
    },
  });
  // A lease long enough that no renewal runs first: the Tool's emit is what finds the session gone.
  await using owner = await Brain.open({ path, leaseMs: 60_000 });
  const session = await owner.sessions.create({ tools: [gated()] });
  const call = await session.start("gated", {});
  const other = await Brain.open({ path });
  await other.sessions.delete(session.id);
  await other.close();
  go.resolve();
  assert.ok(hasCode("session_not_found")(await emitted.promise), "the commit that found it gone says so");
  const ended = await call.ended.then(() => undefined, (error: BrainError) => error);
  assert.equal(ended?.code, "fenced", "the call's end could not be committed: its Brain writes no more to the session");
  assert.equal((ended?.cause as BrainError | undefined)?.code, "session_not_found");
  await assert.rejects(session.call("gated", {}), hasCode("session_closed", /deleted/));
});

for (const kind of ["embedded", "remote"] as const) {
  Deno.test(`${kind} Brain: sessions.get honours waitMs while another owner's lease is live`, async () => {
    const path = `${dir}/${crypto.randomUUID()}.kv`;
    const token = "wait-token";
    // A stopped owner: its lease is in the journal, its process renews it no more.
    const journal = await KvJournal.open(path);
    // A server keeps host app's session s under its host-scoped key.
    const id = kind === "remote" ? hostSessionKey("app", "s") : "s";
    await journal.createSession({
      id,
      createdAt: Date.now(),
      tools: [held().placed().advertised],
      host: { id: "app", tokenHash: await hashToken(token) },
    });
    const lease = await journal.acquire(id, { owner: "gone", ttlMs: 2_000 });
    const [started] = await journal.append(id, [
      { kind: "tool_call_started", tool: "hold", input: { n: 1 }, activation: "a" },
    ], { lease });
    await journal.close();
    const server = kind === "remote" ? await serveBrain({ path, hostTokens: { app: token } }) : undefined;
    const brain = server ? new Brain({ url: server.url, token, host: "app" }) : await Brain.open({ path });
    const host = server ? {} : { host: { id: "app", token } };
    try {
      // Without a wait a live lease refuses at once (a server left to its own default would wait it out; a server
      // takes over stranded sessions only once their lease lapsed).
      await assert.rejects(
        brain.sessions.get("s", { tools: [held().placed()], waitMs: 0, ...host }),
        hasCode("session_owned"),
      );
      await assert.rejects(
        brain.sessions.get("s", { tools: [held().placed()], waitMs: -1, ...host }),
        hasCode("invalid_argument"),
      );
      const session = await brain.sessions.get("s", { tools: [held().placed()], waitMs: 5_000, ...host });
      const end = terminals(await session.read(), started.sequence);
      assert.deepEqual(end.map((record) => record.kind === "tool_call_finished" && record.cause), ["unknown"]);
    } finally {
      await brain.close();
      await server?.shutdown();
    }
  });
}

Deno.test("a server ends the calls of an owner that died once its lease lapsed, with no host connected", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const journal = await KvJournal.open(path);
  await journal.createSession({ id: "s", createdAt: Date.now(), tools: [held().placed().advertised] });
  const lease = await journal.acquire("s", { owner: "gone", ttlMs: 300 });
  const [started] = await journal.append("s", [
    { kind: "tool_call_started", tool: "hold", input: { n: 1 }, activation: "a" },
  ], { lease });
  await journal.close();
  await using server = await servedBrain({ path, leaseMs: 600, serverToken: "operator" });
  const records = await until(
    journalRecords(server.journal, "s"),
    (seen) => terminals(seen, started.sequence).length > 0,
    "the stranded call's end",
  );
  const [end] = terminals(records, started.sequence);
  assert.ok(end.kind === "tool_call_finished" && end.cause === "unknown");
  assert.ok(end.at >= lease.expiresAt, "not before the dead owner's lease lapsed");
  assert.equal(await server.journal.holder("s"), undefined, "the server gave the session up again");
  assert.deepEqual(await server.journal.stranded(), []);
});
