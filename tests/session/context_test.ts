import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainError, isFailure, type JsonValue, ok, tool, type ToolContext } from "../../mod.ts";
import { callKinds, callRecords, untilReturned } from "../_support/call_records.ts";
import { embeddedSession } from "../_support/embedded_session.ts";
import { handoff } from "../_support/handoff.ts";
import { hasCode } from "../_support/has_code.ts";
import { heldCheck } from "../_support/held_check.ts";

type Ctx = ToolContext<Record<string, unknown>, unknown>;

/**
 * How far ahead a deadline is set when the Tool must run (and act) before it passes: long enough for a
 * call to reach its Tool on a loaded machine, so only the deadline under test ends the call.
 */
const RUN_FIRST_MS = 300;

/** A Tool that hands its ctx to the test and returns nothing, so the test drives it. */
function driven(name = "driven") {
  const contexts = handoff<Ctx>();
  const placed = tool({
    name,
    description: "A test Tool.",
    input: z.object({}).passthrough(),
    options: z.object({ label: z.string() }).default({ label: "x" }),
    run: (_input, ctx) => {
      contexts.put(ctx as unknown as Ctx);
    },
  })({ label: "placed" });
  return { placed, next: () => contexts.next("the Tool to run") };
}

/** A Tool that finishes at once, called to commit a sentinel that the session's later records are read up to. */
const sentinel = tool({
  name: "sentinel",
  description: "Commits a sentinel.",
  input: z.object({}),
  run: (_input, ctx) => ctx.finish("sentinel"),
});

Deno.test("ctx carries frozen options, sessionId, the started sequence and the deadline", async () => {
  const { placed, next } = driven();
  await using session = await embeddedSession([placed]);
  const deadline = Date.now() + 60_000;
  const call = await session.start(placed, {}, { deadline });
  const ctx = await next();
  assert.deepEqual(ctx.options, { label: "placed" });
  assert.ok(Object.isFrozen(ctx.options));
  assert.equal(ctx.sessionId, session.id);
  assert.equal(ctx.sequence, call.sequence);
  const [started] = await callRecords(session, call.sequence);
  assert.equal(started.kind, "tool_call_started");
  assert.equal(ctx.deadline, deadline);
  await ctx.finish();
  const unlimited = await session.start(placed, {});
  assert.equal((await next()).deadline, undefined);
  await unlimited.cancel();
});

Deno.test("factory options are parsed once per placement: every call sees the same frozen object", async () => {
  let parses = 0;
  const seen: unknown[] = [];
  const counted = tool({
    name: "counted",
    description: "A test Tool.",
    input: z.object({}),
    options: z.object({ label: z.string().transform((label) => (parses++, label)) }),
    run: (_input, ctx) => (seen.push(ctx.options), ctx.finish()),
  });
  const placed = counted({ label: "once" });
  await using session = await embeddedSession([placed]);
  await session.call(placed, {});
  await session.call(placed, {});
  assert.equal(parses, 1);
  assert.equal(seen.length, 2);
  assert.ok(seen.every((options) => options === placed.options));
});

Deno.test("ctx.emit resolves with the committed sequence, ordered before the result", async () => {
  let eventSequence = 0;
  let visibleAtResolve = false;
  const importer = tool({
    name: "importer",
    description: "A test Tool.",
    input: z.object({ source: z.string() }),
    run: async (input, ctx) => {
      const sequence = await ctx.emit("import_started", { source: input.source });
      eventSequence = sequence;
      return ctx.finish({ eventSequence: sequence, imported: 3 });
    },
  });
  await using session = await embeddedSession([importer()]);
  const probe = session.records();
  const end = await session.call("importer", { source: "s3" });
  const records = await session.read();
  const event = records.find((record) => record.kind === "tool_event")!;
  assert.equal(event.sequence, eventSequence);
  visibleAtResolve = records.some((record) => record.sequence === eventSequence);
  assert.ok(visibleAtResolve);
  assert.deepEqual(end.outcome, ok({ eventSequence, imported: 3 }));
  const result = records.find((record) => record.kind === "tool_result")!;
  assert.ok(event.sequence < result.sequence);
  assert.deepEqual(event.kind === "tool_event" && [event.event, event.data], ["import_started", { source: "s3" }]);
  const iterator = probe[Symbol.asyncIterator]();
  assert.equal((await iterator.next()).value?.kind, "tool_call_started");
  await iterator.return?.();
});

Deno.test("emissions keep call order; finish waits for admitted emissions; later ones are rejected", async () => {
  const { placed, next } = driven();
  await using session = await embeddedSession([placed]);
  const call = await session.start(placed, {});
  const ctx = await next();
  const emits = [ctx.emit("a", 1), ctx.emitResult("r1"), ctx.emit("b", 2), ctx.emitResult("r2")];
  const finished = ctx.finish("done");
  const late = ctx.emit("late", 3);
  await assert.rejects(late, hasCode("call_finished"));
  await assert.rejects(ctx.emitResult("late"), hasCode("call_finished"));
  const receipt = await finished;
  const sequences = await Promise.all(emits);
  assert.deepEqual(sequences, [...sequences].sort((a, b) => a - b));
  assert.ok(sequences.every((sequence) => sequence < receipt.sequence));
  const kinds = await callKinds(session, call.sequence);
  assert.deepEqual(kinds, [
    "tool_call_started",
    "tool_returned",
    "tool_event",
    "tool_result",
    "tool_event",
    "tool_result",
    "tool_result",
    "tool_call_finished",
  ]);
  assert.deepEqual((await call.ended).outcome, ok("done"));
});

Deno.test("the deadline ends the call with timeout and aborts ctx.signal", async () => {
  const { placed, next } = driven();
  await using session = await embeddedSession([placed]);
  const call = await session.start(placed, {}, { deadline: Date.now() + RUN_FIRST_MS });
  const ctx = await next();
  const aborted = new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
  const end = await call.ended;
  await aborted;
  assert.equal(end.cause, "timeout");
  assert.deepEqual(end.outcome, { status: "timeout", message: "the call's deadline passed" }, "it says why");
  assert.equal((ctx.signal.reason as BrainError).code, "timeout");
});

Deno.test("explicit cancellation ends the call with cancelled, by handle or by signal", async () => {
  const { placed, next } = driven();
  await using session = await embeddedSession([placed]);
  const byHandle = await session.start(placed, {});
  const ctx = await next();
  assert.deepEqual((await byHandle.cancel("user stopped")).outcome, { status: "cancelled", message: "user stopped" });
  assert.ok(ctx.signal.aborted);
  const controller = new AbortController();
  const bySignal = await session.start(placed, {}, { signal: controller.signal });
  await next();
  controller.abort();
  const end = await bySignal.ended;
  assert.deepEqual([end.cause, end.outcome.status], ["cancelled", "cancelled"]);
});

Deno.test("timeout and cancelled are failed results that say why the caller stopped waiting", async () => {
  const { placed, next } = driven();
  await using session = await embeddedSession([placed]);
  const expired = await session.start(placed, {}, { deadline: Date.now() + RUN_FIRST_MS });
  await next();
  const timeout = (await expired.ended).outcome;
  assert.ok(isFailure(timeout));
  assert.match(timeout.status === "timeout" ? timeout.message ?? "" : "", /deadline/);
  const stopped = await session.start(placed, {});
  await next();
  const cancelled = (await stopped.cancel("the user closed the tab")).outcome;
  assert.ok(isFailure(cancelled));
  assert.deepEqual(cancelled, { status: "cancelled", message: "the user closed the tab" });
});

Deno.test("an unlimited execution that returned stays open; no timer ends it", async () => {
  const { placed, next } = driven();
  await using session = await embeddedSession([placed]);
  const call = await session.start(placed, {});
  const ctx = await next();
  assert.equal(ctx.deadline, undefined);
  await untilReturned(session, call.sequence);
  let settled = false;
  call.ended.then(() => settled = true);
  // A second call's deadline passes and its end commits: time has passed, and up to that commit the open call is
  // untouched.
  const timed = await session.start(placed, {}, { deadline: Date.now() + 20 });
  assert.equal((await timed.ended).cause, "timeout");
  assert.deepEqual(await callKinds(session, call.sequence), ["tool_call_started", "tool_returned"]);
  assert.equal(settled, false);
  assert.equal(ctx.signal.aborted, false);
  assert.equal(typeof await ctx.emit("still_here", null), "number");
  assert.equal((await ctx.finish("at last")).late, false);
  assert.deepEqual((await call.ended).outcome, ok("at last"));
});

Deno.test("the first terminal cause is retained; a later finish is recorded as late, not applied", async () => {
  const { placed, next } = driven();
  await using session = await embeddedSession([placed]);
  const call = await session.start(placed, {}, { deadline: Date.now() + RUN_FIRST_MS });
  const ctx = await next();
  const end = await call.ended;
  const receipt = await ctx.finish("too late");
  assert.equal(receipt.late, true);
  assert.equal(receipt.sequence, end.sequence);
  await assert.rejects(ctx.emit("after", null), hasCode("call_finished"));
  const records = await callRecords(session, call.sequence);
  assert.deepEqual(records.map((record) => record.kind), [
    "tool_call_started",
    "tool_returned",
    "tool_call_finished",
    "tool_call_late",
  ]);
  assert.equal(records.filter((record) => record.kind === "tool_result").length, 0);
  assert.equal((await call.cancel()).cause, "timeout");
});

Deno.test("a finish from the signal's abort listener is recorded late, after the terminal record of each stop", async () => {
  const { placed, next } = driven();
  await using session = await embeddedSession([placed]);
  for (const stop of ["timeout", "cancelled"] as const) {
    const call = await session.start(placed, {}, { deadline: Date.now() + (stop === "timeout" ? 50 : 60_000) });
    const ctx = await next();
    const receipt = Promise.withResolvers<{ late: boolean; sequence: number }>();
    ctx.signal.addEventListener("abort", () => void ctx.finish("from the listener").then(receipt.resolve));
    const end = stop === "timeout" ? await call.ended : await call.cancel();
    assert.equal(end.cause, stop);
    const { late, sequence } = await receipt.promise;
    assert.deepEqual({ late, sequence }, { late: true, sequence: end.sequence });
    assert.deepEqual((await callRecords(session, call.sequence)).map((record) => record.kind), [
      "tool_call_started",
      "tool_returned",
      "tool_call_finished",
      "tool_call_late",
    ]);
  }
});

Deno.test("an open Tool that never finishes stays open until its deadline", async () => {
  const { placed, next } = driven();
  await using session = await embeddedSession([placed]);
  const deadline = Date.now() + RUN_FIRST_MS;
  const call = await session.start(placed, {}, { deadline });
  const ctx = await next();
  await ctx.emitResult("first");
  const end = await call.ended;
  assert.equal(end.cause, "timeout");
  const finished = (await callRecords(session, call.sequence)).at(-1)!;
  assert.equal(finished.kind, "tool_call_finished");
  assert.ok(finished.at >= deadline, "the call ended no earlier than its deadline");
});

Deno.test("an already expired call stops before input validation and customer code", async () => {
  let ran = false;
  let validated = false;
  const guarded = tool({
    name: "guarded",
    description: "A test Tool.",
    input: z.object({ id: z.string().refine((id) => (validated = true, id.length > 0)) }),
    run: (_input, ctx) => (ran = true, ctx.finish()),
  });
  await using session = await embeddedSession([guarded()]);
  const end = await session.call("guarded", { id: "x" }, { deadline: Date.now() - 1 });
  assert.equal(end.cause, "timeout");
  assert.deepEqual([ran, validated], [false, false]);
  assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_call_finished"]);
});

Deno.test("async input checks consume the deadline; expiry prevents the late run", async () => {
  let ran = false;
  const gate = heldCheck();
  const slow = tool({
    name: "slow",
    description: "A test Tool.",
    input: z.object({ id: z.string().refine(gate.check) }),
    run: (_input, ctx) => (ran = true, ctx.finish("late")),
  });
  await using session = await embeddedSession([slow(), sentinel()]);
  const call = await session.start("slow", { id: "x" }, { deadline: Date.now() + RUN_FIRST_MS });
  await gate.entered;
  assert.equal((await call.ended).cause, "timeout", "the deadline passed while the check waited");
  gate.open();
  await gate.passed;
  await session.call("sentinel", {});
  assert.equal(ran, false);
  assert.deepEqual(await callKinds(session, call.sequence), ["tool_call_started", "tool_call_finished"]);
});

Deno.test("cancelling during async input checks prevents the late run", async () => {
  let ran = false;
  const gate = heldCheck();
  const slow = tool({
    name: "slow_check",
    description: "A test Tool.",
    input: z.object({ id: z.string().refine(gate.check) }),
    run: (_input, ctx) => (ran = true, ctx.finish("late")),
  });
  await using session = await embeddedSession([slow(), sentinel()]);
  const call = await session.start("slow_check", { id: "x" });
  await gate.entered;
  assert.equal((await call.cancel()).cause, "cancelled");
  gate.open();
  await gate.passed;
  await session.call("sentinel", {});
  assert.equal(ran, false);
  assert.deepEqual(await callKinds(session, call.sequence), ["tool_call_started", "tool_call_finished"]);
});

Deno.test("async output checks consume the deadline; expiry prevents the late result", async () => {
  const gate = heldCheck();
  const slow = tool({
    name: "slow_out",
    description: "A test Tool.",
    input: z.object({}),
    output: z.string().refine(gate.check),
    run: (_input, ctx) => ctx.finish("value"),
  });
  await using session = await embeddedSession([slow(), sentinel()]);
  const call = await session.start("slow_out", {}, { deadline: Date.now() + RUN_FIRST_MS });
  await gate.entered;
  assert.equal((await call.ended).cause, "timeout", "the deadline passed while the check waited");
  gate.open();
  await gate.passed;
  await session.call("sentinel", {});
  const results = (await callRecords(session, call.sequence)).filter((record) => record.kind === "tool_result");
  assert.equal(results.length, 0);
});

Deno.test("results and events of one activation share BRAIN_MAX_EMITTED_BYTES", async () => {
  const { placed, next } = driven();
  await using session = await embeddedSession([placed], { maxEmittedBytes: 120 });
  const activation = session.activation();
  const first = await session.start(placed, {}, { activation });
  const a = await next();
  const second = await session.start(placed, {}, { activation });
  const b = await next();
  await a.emit("e", "x".repeat(40));
  await b.emitResult("y".repeat(40));
  assert.ok(activation.emittedBytes > 80);
  await assert.rejects(
    a.emit("e", "z".repeat(40)),
    hasCode("budget_exceeded"),
  );
  await assert.rejects(
    b.emitResult("z".repeat(40)),
    hasCode("budget_exceeded"),
  );
  const end = await a.finish("w".repeat(40)).then(() => first.ended);
  assert.equal(end.outcome.status === "error" && end.outcome.error.code, "budget_exceeded");
  const used = activation.emittedBytes;
  const fresh = await session.start(placed, {});
  const c = await next();
  assert.equal(typeof await c.emit("e", "x".repeat(40)), "number", "another activation has its own budget");
  assert.equal(activation.emittedBytes, used);
  await b.finish();
  await second.ended;
  await fresh.cancel();
});

Deno.test("a finish is charged exactly its outcome's JSON bytes and its content's, whatever the value holds", async () => {
  const utf8 = (text: string) => new TextEncoder().encode(text).length;
  const finisher = tool({
    name: "finisher",
    description: "Finishes with the value and content it is given.",
    input: z.object({ value: z.unknown(), content: z.string().optional() }),
    output: z.unknown(),
    run: ({ value, content }, ctx) => ctx.finish(value, content === undefined ? undefined : { content }),
  });
  const cases: { value: JsonValue; content?: string }[] = [
    { value: 7 },
    { value: { "clé": ["é", "😀", null, true, -0, 1e21, 0.1, -12], nested: { "": "" } } },
    { value: 'naïve \u2028 "quoted"', content: "résumé 😀" },
    { value: [], content: "" },
  ];
  for (const { value, content } of cases) {
    const charged = utf8(JSON.stringify(ok(value))) + (content === undefined ? 0 : utf8(content));
    for (const budget of [charged, charged - 1]) {
      await using session = await embeddedSession([finisher()], { maxEmittedBytes: budget });
      const end = await session.call("finisher", content === undefined ? { value } : { value, content });
      const refused = end.outcome.status === "error" && end.outcome.error.code === "budget_exceeded";
      assert.equal(refused, budget < charged, `${JSON.stringify(value)} within ${budget} of ${charged} bytes`);
    }
  }
});

Deno.test("a call that returned keeps its activation's budget and deadline", async () => {
  const contexts = handoff<Ctx>();
  const background = tool({
    name: "background",
    description: "A test Tool.",
    input: z.object({}),
    run: (_input, ctx) => {
      contexts.put(ctx as unknown as Ctx);
      return "started";
    },
  });
  await using session = await embeddedSession([background()]);
  const activation = session.activation();

  const open = await session.start("background", {}, { activation });
  const later = await contexts.next("the Tool to run");
  await untilReturned(session, open.sequence);
  const spent = activation.emittedBytes;
  assert.ok(spent > 0, "the returned result was charged");
  await later.emit("progress", 1);
  assert.ok(activation.emittedBytes > spent, "an emission after the return is charged to the same activation");
  await later.finish();

  const timed = await session.start("background", {}, { activation, deadline: Date.now() + RUN_FIRST_MS });
  const timedCtx = await contexts.next("the Tool to run");
  await untilReturned(session, timed.sequence);
  assert.equal((await timed.ended).cause, "timeout", "the deadline still ends a call that returned");
  assert.equal((timedCtx.signal.reason as BrainError).code, "timeout");
});

Deno.test("calls whose intents commit as the session ends end cancelled, never dispatched, on either kind of journal", async () => {
  let dispatched = 0;
  const counted = tool({
    name: "counted",
    description: "Counts its dispatch and stays open.",
    input: z.object({}),
    run: () => void dispatched++,
  })();
  for (const open of [() => new Brain(), () => Brain.open({ path: ":memory:" })]) {
    await using brain = await open();
    const session = await brain.sessions.create({ tools: [counted] });
    const ends = Promise.all([
      session.call(counted, {}),
      session.call(counted, {}, { timeoutMs: 60_000 }),
      session.start(counted, {}).then((call) => call.ended),
    ]);
    await session.end();
    assert.deepEqual((await ends).map((end) => end.cause), ["cancelled", "cancelled", "cancelled"]);
    assert.equal(dispatched, 0);
    const records = await session.read();
    assert.deepEqual(records.filter((record) => record.kind === "tool_call_finished").map((record) => record.call), [
      1,
      2,
      3,
    ]);
  }
});

Deno.test("ending a session ends its open calls as cancelled and releases its handlers", async () => {
  const { placed, next } = driven();
  await using session = await embeddedSession([placed]);
  const call = await session.start(placed, {});
  await next();
  await session.end();
  assert.equal((await call.ended).cause, "cancelled");
  await assert.rejects(
    session.start(placed, {}),
    hasCode("session_closed"),
  );
  assert.deepEqual(session.tools, []);
});
