import assert from "node:assert/strict";
import { z } from "zod";
import {
  Brain,
  BRAIN_MAX_CANCEL_REASON,
  BRAIN_MAX_INPUT_BYTES,
  BRAIN_MAX_LATE_RECORDS,
  BRAIN_TELEMETRY_LIMITS,
  type CallSink,
  component,
  type Dispatch,
  type Implementation,
  MAX_JSON_DEPTH,
  ok,
  tool,
} from "../../mod.ts";
import { findNonJson } from "../../src/outcome/json.ts";
import { MemoryJournal } from "../../src/journal/memory.ts";
import { TelemetryBudget } from "../../src/contract/budgets.ts";
import { PROBE, probeTool, reader, readerBrain } from "../_support/components.ts";
import { telemetrySink } from "../_support/telemetry_sink.ts";
import { hasCode } from "../_support/has_code.ts";

const echo = tool({
  name: "echo",
  description: "Echoes.",
  input: z.unknown(),
  run: (input, ctx) => ctx.finish(input as never),
});

function nested(depth: number): unknown {
  let value: unknown = 0;
  for (let level = 0; level < depth; level++) value = { a: value };
  return value;
}

Deno.test("a call's input over maxInputBytes is payload_too_large and journals nothing", async () => {
  const brain = new Brain({ maxInputBytes: 1024 });
  try {
    const session = await brain.sessions.create({ tools: [echo()] });
    await assert.rejects(session.start("echo", "x".repeat(1024)), hasCode("payload_too_large"));
    assert.deepEqual(await session.read(), []);
    assert.equal((await session.call("echo", "x".repeat(1000))).cause, "finish");
  } finally {
    await brain.close();
  }
  const defaults = new Brain();
  try {
    const session = await defaults.sessions.create({ tools: [echo()] });
    await assert.rejects(session.start("echo", "x".repeat(BRAIN_MAX_INPUT_BYTES)), hasCode("payload_too_large"));
  } finally {
    await defaults.close();
  }
  assert.throws(() => new Brain({ maxInputBytes: 0 }), hasCode("invalid_argument"));
  assert.throws(() => new Brain({ maxInputBytes: Infinity }), hasCode("invalid_argument"));
});

Deno.test("a cancel reason over BRAIN_MAX_CANCEL_REASON is payload_too_large and leaves the call running", async () => {
  const brain = new Brain();
  const release = Promise.withResolvers<void>();
  const hold = tool({
    name: "hold",
    description: "Waits.",
    input: z.object({}),
    run: async (_, ctx) => {
      await Promise.race([release.promise, new Promise((resolve) => ctx.signal.addEventListener("abort", resolve))]);
    },
  });
  try {
    const session = await brain.sessions.create({ tools: [hold()] });
    const call = await session.start("hold", {});
    await assert.rejects(call.cancel("x".repeat(BRAIN_MAX_CANCEL_REASON + 1)), hasCode("payload_too_large"));
    await assert.rejects(call.cancel(42 as never), hasCode("invalid_argument"));
    const end = await call.cancel("x".repeat(BRAIN_MAX_CANCEL_REASON));
    assert.equal(end.cause, "cancelled");
  } finally {
    release.resolve();
    await brain.close();
  }
});

Deno.test("late reports are recorded up to BRAIN_MAX_LATE_RECORDS per call; more are refused budget_exceeded", async () => {
  const refusals: string[] = [];
  const done = Promise.withResolvers<void>();
  const chatty: Implementation = {
    kind: "component",
    admit: () => Promise.resolve(),
    async execute({ sink }: Dispatch) {
      await sink.finish({ outcome: ok("first") });
      for (let attempt = 0; attempt < 100; attempt++) {
        await (sink as CallSink).finish({ outcome: ok("again") }).catch((error) => refusals.push(error.code));
      }
      done.resolve();
    },
  };
  await using brain = new Brain();
  const placed = tool({
    name: "chatty",
    description: "Finishes too often.",
    input: z.object({}),
    implementation: chatty,
  });
  const session = await brain.sessions.create({ tools: [placed()] });
  assert.equal((await session.call("chatty", {})).cause, "finish");
  await done.promise;
  const late = (await session.read()).filter((record) => record.kind === "tool_call_late");
  assert.equal(late.length, BRAIN_MAX_LATE_RECORDS);
  assert.equal(refusals.length, 100 - BRAIN_MAX_LATE_RECORDS);
  assert.ok(refusals.every((code) => code === "budget_exceeded"));
});

Deno.test("input nested deeper than MAX_JSON_DEPTH is invalid_input, never a RangeError, embedded and on a KV file", async () => {
  assert.equal(findNonJson(nested(MAX_JSON_DEPTH - 1)), undefined);
  assert.match(findNonJson(nested(100_000)) ?? "", /deeper than/);
  await Deno.mkdir(".tmp", { recursive: true });
  const path = `.tmp/deep-${crypto.randomUUID()}.kv`;
  for (const brain of [new Brain(), await Brain.open({ path })]) {
    try {
      const session = await brain.sessions.create({ tools: [echo()] });
      await assert.rejects(session.start("echo", nested(100_000) as never), hasCode("invalid_input"));
      assert.deepEqual(await session.read(), []);
    } finally {
      await brain.close();
    }
  }
  for (const suffix of ["", "-shm", "-wal", ".wake"]) await Deno.remove(path + suffix).catch(() => {});
});

Deno.test("session metadata too large for a KV value is payload_too_large, not a TypeError, and leaves no session", async () => {
  await Deno.mkdir(".tmp", { recursive: true });
  const path = `.tmp/meta-${crypto.randomUUID()}.kv`;
  const brain = await Brain.open({ path });
  try {
    const wordy = tool({
      name: "wordy",
      description: "w".repeat(70_000),
      input: z.object({}),
      run: (_, ctx) => ctx.finish(1),
    });
    await assert.rejects(brain.sessions.create({ id: "wordy", tools: [wordy()] }), hasCode("payload_too_large"));
    assert.deepEqual(await brain.sessions.list(), []);
  } finally {
    await brain.close();
    for (const suffix of ["", "-shm", "-wal", ".wake"]) await Deno.remove(path + suffix).catch(() => {});
  }
});

Deno.test("telemetry budget: size, rate with a burst, and a per-call total, each a typed refusal", () => {
  const { maxMessageBytes, perSecond, burst, maxPerCall } = BRAIN_TELEMETRY_LIMITS;
  let now = 0;
  const budget = new TelemetryBudget(() => now);
  assert.equal(budget.admit("info", "x".repeat(maxMessageBytes + 1))?.code, "payload_too_large");
  for (let sent = 0; sent < burst; sent++) assert.equal(budget.admit("info", "ok"), undefined);
  assert.equal(budget.admit("info", "ok")?.code, "budget_exceeded", "the burst is spent");
  now += 1000 / perSecond;
  assert.equal(budget.admit("info", "ok"), undefined, "one entry a 1/perSecond later");
  let admitted = burst + 1;
  while (admitted < maxPerCall) {
    now += 1000;
    if (budget.admit("info", "ok") === undefined) admitted++;
  }
  now += 60_000;
  assert.equal(budget.admit("info", "ok")?.code, "budget_exceeded", "the per-call total is spent");
});

Deno.test("a Component's oversize telemetry is dropped with one typed notice instead of reaching the listener", async () => {
  await using brain = readerBrain();
  const { entries, telemetry } = telemetrySink();
  const placed = probeTool("telemetry", component(PROBE, { telemetry }))({ env: reader });
  const session = await brain.sessions.create({ tools: [placed] });
  const big = "y".repeat(BRAIN_TELEMETRY_LIMITS.maxMessageBytes * 4);
  assert.equal((await session.call("telemetry", big, { timeoutMs: 20_000 })).cause, "finish");
  assert.equal(entries.length, 1);
  assert.equal(entries[0].code, "payload_too_large");
  assert.ok(!entries[0].message.includes("yyyy"));
});

Deno.test("a finish whose result the journal cannot keep still ends the call, error invalid_output, leaving nothing open", async () => {
  const unfit = (kind: string) => kind === "deep" ? nested(MAX_JSON_DEPTH + 10) : { x: NaN };
  // Through ctx.finish, and straight through the CallSink a hand-written Implementation (or a host or extension) reports to.
  const direct: Implementation = {
    kind: "component",
    admit: () => Promise.resolve(),
    async execute({ invocation, sink }: Dispatch) {
      await sink.finish({ outcome: ok(unfit((invocation.input as { kind: string }).kind) as never) });
    },
  };
  const input = z.object({ kind: z.enum(["deep", "nan"]) });
  const viaContext = tool({
    name: "via_context",
    description: "Finishes with what it is told to.",
    input,
    run: ({ kind }, ctx) => ctx.finish(unfit(kind) as never),
  });
  const viaSink = tool({ name: "via_sink", description: "Finishes through its sink.", input, implementation: direct });
  const journal = new MemoryJournal();
  await using brain = new Brain({ journal });
  const session = await brain.sessions.create({ tools: [viaContext(), viaSink()] });
  for (const name of ["via_context", "via_sink"]) {
    for (const kind of ["deep", "nan"] as const) {
      const end = await session.call(name, { kind }, { timeoutMs: 10_000 });
      const code = end.outcome.status === "error" && end.outcome.error.code;
      assert.deepEqual([end.cause, code], ["error", "invalid_output"], `${name} ${kind}`);
    }
  }
  assert.deepEqual(await journal.openCalls(session.id), [], "no call was left open");
});
