import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, tool, type ToolContext } from "../../mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { MemoryJournal } from "../../src/journal/memory.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import type { Journal } from "../../src/journal/journal.ts";
import { scratchDir } from "../_support/scratch.ts";
import type { AppendOptions } from "../../src/journal/lease.ts";
import type { JournalRecord, RecordBody } from "../../src/journal/records.ts";
import { hasCode } from "../_support/has_code.ts";
import { gate } from "../_support/gate.ts";
import { ofKind, until } from "../_support/until.ts";

/**
 * `Store` whose commits fail the next commit holding a record of a kind in `losing` (by default those that open
 * a call: `tool_call_started`, `model_call_started`) with `storage_unavailable` after writing it
 * (`lose: "answer"`) or before (`lose: "commit"`), as a connection cut after or before the database took the
 * commit would; while `down`, reads fail too.
 */
// deno-lint-ignore no-explicit-any
function losingAnswers<Store extends new (...args: any[]) => Journal>(Store: Store) {
  return class extends Store {
    lose: "answer" | "commit" | undefined;
    losing: string[] = ["tool_call_started", "model_call_started"];
    down = false;
    /** Reads refused while down; `refusing(n)` resolves once there were `n`. */
    #refused = 0;
    #waiting: { count: number; resolve: () => void }[] = [];

    refusing(count: number): Promise<void> {
      const { promise, resolve } = Promise.withResolvers<void>();
      this.#waiting.push({ count, resolve });
      this.#counted();
      return promise;
    }

    #counted(): void {
      this.#waiting = this.#waiting.filter(({ count, resolve }) => count > this.#refused || void resolve());
    }

    #refuse(): Promise<never> {
      this.#refused++;
      this.#counted();
      return Promise.reject(unavailable());
    }

    override async append(sessionId: string, bodies: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]> {
      const lose = bodies.some(({ kind }) => this.losing.includes(kind)) ? this.lose : undefined;
      if (lose) this.lose = undefined;
      if (lose === "commit") throw unavailable();
      const records = await super.append(sessionId, bodies, options);
      if (lose === "answer") throw unavailable();
      return records;
    }

    override openCalls(sessionId: string): Promise<JournalRecord[]> {
      return this.down ? this.#refuse() : super.openCalls(sessionId);
    }

    override read(sessionId: string, options?: { from?: number; limit?: number }): Promise<JournalRecord[]> {
      return this.down ? this.#refuse() : super.read(sessionId, options);
    }
  };
}

/** A memory journal that loses answers. */
const LostAnswers = losingAnswers(MemoryJournal);
/** A journal on a Deno KV file that loses answers. */
const KvLostAnswers = losingAnswers(KvJournal);
const scratch = scratchDir("lost-commit-answer");

const unavailable = () => new BrainError("storage_unavailable", "the connection was cut");

/** A Tool counting its runs, finishing each once `release` opens (at once unless held). */
function counted() {
  const runs: number[] = [];
  let held: ReturnType<typeof gate> | undefined;
  const placed = tool({
    name: "counted",
    description: "Counts its runs.",
    input: z.object({ n: z.number() }),
    run: async ({ n }, ctx) => {
      runs.push(n);
      if (n < 0) await (held ??= gate()).wait;
      return ctx.finish(n);
    },
  });
  return { placed, runs, release: () => (held ??= gate()).open() };
}

Deno.test("a call whose intent landed though the store reported the commit failed runs once, as committed; another handle's open call is untouched", async () => {
  const journal = new LostAnswers();
  await using brain = new Brain({ journal });
  const { placed, runs, release } = counted();
  const first = await brain.sessions.create({ tools: [placed()] });
  const second = await brain.sessions.get(first.id, { tools: [placed()] });
  const background = await first.start("counted", { n: -1 });
  journal.lose = "answer";
  const end = await second.call("counted", { n: 1 });
  assert.deepEqual(end.outcome, { status: "ok", value: 1 });
  assert.deepEqual(runs, [-1, 1], "the call ran once, the background one kept running");
  assert.deepEqual((await journal.openCalls(first.id)).map((record) => record.sequence), [background.sequence]);
  release();
  assert.equal((await background.ended).cause, "finish");
  const records = await first.read();
  assert.equal(ofKind(records, "tool_call_started").length, 2);
  assert.deepEqual(ofKind(records, "tool_call_finished").map((record) => record.cause), ["finish", "finish"]);
});

Deno.test("an intent the store failed before writing fails storage_unavailable, is never dispatched, and the next call runs", async () => {
  const journal = new LostAnswers();
  await using brain = new Brain({ journal });
  const { placed, runs } = counted();
  const session = await brain.sessions.create({ tools: [placed()] });
  journal.lose = "commit";
  await assert.rejects(session.call("counted", { n: 1 }), hasCode("storage_unavailable"));
  assert.equal((await session.call("counted", { n: 2 })).outcome.status, "ok");
  assert.deepEqual(runs, [2]);
  assert.deepEqual(await journal.openCalls(session.id), []);
  assert.equal(ofKind(await session.read(), "tool_call_started").length, 1);
});

Deno.test("a model request whose start landed though the store reported it failed is answered once", async () => {
  const journal = new LostAnswers();
  await using brain = new Brain({ journal });
  const provider = new ScriptedProvider(["Hello!"]);
  const session = await brain.sessions.create({ model: { provider, model: "demo" } });
  journal.lose = "answer";
  assert.equal((await session.send("Hi")).content, "Hello!");
  const records = await session.read();
  assert.equal(ofKind(records, "model_call_started").length, 1);
  assert.deepEqual(ofKind(records, "model_call_finished").map((record) => record.outcome.status), ["ok"]);
  assert.deepEqual(await journal.openCalls(session.id), []);
});

Deno.test("while the store stays down the caller is told storage_unavailable; once it answers, the intent that landed ends unknown while the handles live, never dispatched", async () => {
  const journal = new LostAnswers();
  await using brain = new Brain({ journal });
  const { placed, runs, release } = counted();
  const session = await brain.sessions.create({ tools: [placed()] });
  const background = await session.start("counted", { n: -1 });
  journal.lose = "answer";
  journal.down = true;
  await assert.rejects(session.call("counted", { n: 1 }), hasCode("storage_unavailable"));
  // Read past the failing store: the intent is there.
  const phantom = ofKind(await MemoryJournal.prototype.read.call(journal, session.id), "tool_call_started")[1];
  assert.equal(phantom?.kind, "tool_call_started", "the intent landed");
  journal.down = false;
  const records = await until(
    session,
    (records) => ofKind(records, "tool_call_finished").some((record) => record.call === phantom.sequence),
    { what: "the landed intent's end", timeoutMs: 4_000 },
  );
  const [end] = ofKind(records, "tool_call_finished");
  assert.equal(end.cause, "unknown");
  assert.deepEqual(runs, [-1], "the call told it failed never ran");
  assert.deepEqual((await journal.openCalls(session.id)).map((record) => record.sequence), [background.sequence]);
  release();
  assert.equal((await background.ended).cause, "finish");
  assert.equal((await session.call("counted", { n: 2 })).outcome.status, "ok");
});

const stores = {
  memory: () => Promise.resolve(new LostAnswers()),
  "KV file": async () => {
    const path = `${scratch}/${crypto.randomUUID()}.kv`;
    return new KvLostAnswers(await Deno.openKv(path), path);
  },
};

for (const [store, open] of Object.entries(stores)) {
  Deno.test(`${store}: an event, result or finish whose commit landed though the store reported it failed is answered as committed, once; one that did not land fails storage_unavailable, leaving nothing`, async () => {
    const journal = await open();
    await using brain = new Brain({ journal });
    /** Loses the next commit holding a record of `kind`, its answer or the commit itself. */
    const losing = (kind: string, lose: "answer" | "commit") => {
      journal.losing = [kind];
      journal.lose = lose;
    };
    const answers = Promise.withResolvers<Record<string, unknown>>();
    const reporter = tool({
      name: "reporter",
      description: "Emits, emits a result and finishes while the store loses answers.",
      input: z.object({}),
      run: (_input, ctx) => reported(ctx).then(answers.resolve, answers.reject),
    });
    const reported = async (ctx: ToolContext) => {
      losing("tool_event", "commit");
      const refused = await ctx.emit("lost", 0).then(() => undefined, (error) => error);
      losing("tool_event", "answer");
      const event = await ctx.emit("kept", 1);
      losing("tool_result", "answer");
      const result = await ctx.emitResult(2);
      losing("tool_call_finished", "answer");
      const finished = await ctx.finish(3);
      return { refused, event, result, finished };
    };
    const session = await brain.sessions.create({ tools: [reporter()] });
    const ending = session.call("reporter", {});
    const { refused, event, result, finished } = await answers.promise;
    const end = await ending;
    assert.ok(hasCode("storage_unavailable")(refused), "a commit that did not land fails");
    const records = await session.read();
    assert.deepEqual(ofKind(records, "tool_event").map((record) => [record.sequence, record.event]), [[event, "kept"]]);
    assert.deepEqual(ofKind(records, "tool_result").map((record) => record.sequence), [result, end.sequence - 1]);
    assert.deepEqual({ ...finished as object }, { sequence: end.sequence, late: false });
    assert.deepEqual([end.cause, end.outcome], ["finish", { status: "ok", value: 3 }]);
    assert.equal(ofKind(records, "tool_call_finished").length, 1);
    assert.equal(ofKind(records, "tool_call_late").length, 0);
    assert.deepEqual(await journal.openCalls(session.id), []);
  });
}

/** Reads the journal's records past its switch that fails reads. */
function stored(journal: Journal, sessionId: string): Promise<JournalRecord[]> {
  return MemoryJournal.prototype.read.call(journal, sessionId);
}

/** A journal that loses answers and stays readable after its Brain closed it, until `dispose`. */
class KeptOpen extends LostAnswers {
  override close(): Promise<void> {
    return Promise.resolve();
  }
  [Symbol.dispose](): void {
    void MemoryJournal.prototype.close.call(this);
  }
}

Deno.test("close() while an event's commit of unknown outcome is being read back returns at once, leaves no timer, and the read it makes at once decides: landed, answered as committed", async () => {
  using journal = new KeptOpen();
  const brain = new Brain({ journal });
  const emitted = Promise.withResolvers<unknown>();
  const emitter = tool({
    name: "emitter",
    description: "Emits once, then waits for its end.",
    input: z.object({}),
    run: (_input, ctx) => {
      ctx.emit("kept", 1).then(emitted.resolve, emitted.reject);
      return new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve(undefined)));
    },
  });
  const session = await brain.sessions.create({ tools: [emitter()] });
  journal.losing = ["tool_event"];
  journal.lose = "answer";
  journal.down = true;
  const call = await session.start("emitter", {});
  // Three reads refused: the read-back now pauses a second before its fourth.
  await journal.refusing(3);
  journal.down = false;
  const started = performance.now();
  await brain.close();
  const took = performance.now() - started;
  assert.ok(took < 1_000, `close() took ${Math.round(took)} ms`);
  const event = await emitted.promise;
  const records = await stored(journal, session.id);
  assert.deepEqual(ofKind(records, "tool_event").map((record) => record.sequence), [event], "answered as committed");
  assert.deepEqual(
    ofKind(records, "tool_call_finished").map((record) => [record.call, record.cause]),
    [[call.sequence, "cancelled"]],
  );
});

Deno.test("close() while the store stays down under an event's read-back returns at once: the event is reported failed, the call's end is committed once", async () => {
  using journal = new KeptOpen();
  const brain = new Brain({ journal });
  const emitted = Promise.withResolvers<unknown>();
  const emitter = tool({
    name: "emitter",
    description: "Emits once, then waits for its end.",
    input: z.object({}),
    run: (_input, ctx) => {
      ctx.emit("doubtful", 1).then(emitted.resolve, emitted.reject);
      return new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve(undefined)));
    },
  });
  const session = await brain.sessions.create({ tools: [emitter()] });
  journal.losing = ["tool_event"];
  journal.lose = "answer";
  journal.down = true;
  const call = await session.start("emitter", {});
  await journal.refusing(3);
  const started = performance.now();
  await brain.close();
  const took = performance.now() - started;
  assert.ok(took < 1_000, `close() took ${Math.round(took)} ms`);
  await assert.rejects(emitted.promise, hasCode("storage_unavailable"));
  const ends = ofKind(await stored(journal, session.id), "tool_call_finished");
  assert.deepEqual(ends.map((record) => [record.call, record.cause]), [[call.sequence, "cancelled"]]);
});

Deno.test("close() while a call's start of unknown outcome is being decided returns at once, leaves no timer, and the read it makes at once decides", async () => {
  using journal = new KeptOpen();
  const brain = new Brain({ journal });
  const { placed, runs } = counted();
  const session = await brain.sessions.create({ tools: [placed()] });
  journal.lose = "answer";
  journal.down = true;
  const starting = session.start("counted", { n: 1 });
  await journal.refusing(3);
  journal.down = false;
  const started = performance.now();
  await brain.close();
  const took = performance.now() - started;
  assert.ok(took < 1_000, `close() took ${Math.round(took)} ms`);
  const call = await starting;
  assert.equal((await call.ended).cause, "cancelled", "decided landed: the session's end ended it");
  assert.deepEqual(runs, [], "never dispatched: the session ended first");
  assert.deepEqual(await journal.openCalls(session.id), []);
});
