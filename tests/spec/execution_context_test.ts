import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainSession, type JsonValue, ok, tool, type ToolContext } from "../../mod.ts";
import { callKinds, callRecords, hasCode, specTest } from "./_brains.ts";
import { extensionService } from "../_support/extension_service.ts";
import { probeTool, reader } from "../_support/components.ts";

/** A Tool that hands each call's ctx to the test, in call order, which drives it. */
function driven() {
  const arrived: PromiseWithResolvers<ToolContext>[] = [];
  const slot = (i: number) => arrived[i] ??= Promise.withResolvers();
  let runs = 0;
  let taken = 0;
  const declared = tool({
    name: "driven",
    description: "Driven by the test.",
    input: z.object({}),
    run: (_input, ctx) => void slot(runs++).resolve(ctx as unknown as ToolContext),
  });
  return { placed: declared(), next: () => slot(taken++).promise };
}

/** Bytes a result is charged: its outcome's JSON text. */
const resultBytes = (value: JsonValue) => new TextEncoder().encode(JSON.stringify(ok(value))).length;
/** Bytes an event is charged: its kind and its data's JSON text. */
const eventBytes = (kind: string, data: JsonValue) =>
  new TextEncoder().encode(kind).length + new TextEncoder().encode(JSON.stringify(data)).length;

specTest(
  "emissions filling BRAIN_MAX_EMITTED_BYTES exactly are committed; one byte more is budget_exceeded",
  async (brain) => {
    const { placed, next } = driven();
    const session = await brain.sessions.create({ tools: [placed] });
    const call = await session.start("driven", {});
    const ctx = await next();
    const data = "é".repeat(100);
    await ctx.emit("progress", data);
    const left = 300 - eventBytes("progress", data);
    const value = "x".repeat(left - resultBytes(""));
    assert.equal(resultBytes(value), left);
    await ctx.emitResult(value);
    await assert.rejects(ctx.emit("e", ""), hasCode("budget_exceeded"));
    await assert.rejects(ctx.emitResult(""), hasCode("budget_exceeded"));
    await ctx.finish();
    const end = await call.ended;
    assert.deepEqual([end.cause, end.outcome], ["finish", ok(value)]);
    assert.deepEqual((await callKinds(session, call.sequence)).filter((kind) => kind !== "tool_returned"), [
      "tool_call_started",
      "tool_event",
      "tool_result",
      "tool_call_finished",
    ]);
  },
  { maxEmittedBytes: 300 },
);

specTest(
  "calls of one activation share its emitted bytes; a finish over the budget ends the call budget_exceeded",
  async (brain) => {
    const { placed, next } = driven();
    const session = await brain.sessions.create({ tools: [placed] });
    const activation = session.activation();
    const first = await session.start("driven", {}, { activation });
    const a = await next();
    const second = await session.start("driven", {}, { activation });
    const b = await next();
    await a.emit("e", "x".repeat(100));
    await assert.rejects(b.emit("e", "x".repeat(100)), hasCode("budget_exceeded"));
    await b.finish("y".repeat(100));
    const refused = await second.ended;
    assert.deepEqual(
      [refused.cause, refused.outcome.status === "error" && refused.outcome.error.code],
      ["error", "budget_exceeded"],
    );
    const fresh = await session.start("driven", {});
    const c = await next();
    assert.equal(typeof await c.emit("e", "x".repeat(100)), "number", "another activation has its own budget");
    await a.finish();
    await c.finish();
    assert.equal((await first.ended).cause, "finish");
    assert.equal((await fresh.ended).cause, "finish");
  },
  { maxEmittedBytes: 150 },
);

specTest(
  "Brain commits the Tool intent before dispatch: the running function can read its tool_call_started",
  async (brain) => {
    const box: { session?: BrainSession } = {};
    const reader = tool({
      name: "reader",
      description: "Reads its own intent.",
      input: z.object({ n: z.number() }),
      run: async (_input, ctx) => {
        const [started] = await box.session!.read({ from: ctx.sequence, limit: 1 });
        return ctx.finish(started.kind === "tool_call_started" ? { tool: started.tool, input: started.input } : null);
      },
    });
    const session = box.session = await brain.sessions.create({ tools: [reader()] });
    const end = await session.call("reader", { n: 1 });
    assert.deepEqual(end.outcome, ok({ tool: "reader", input: { n: 1 } }));
  },
);

specTest("there is no automatic retry: a failing function runs once per call", async (brain) => {
  let runs = 0;
  const flaky = tool({
    name: "flaky",
    description: "Fails.",
    input: z.object({}),
    run: () => {
      runs++;
      throw new Error("transient");
    },
  });
  const session = await brain.sessions.create({ tools: [flaky()] });
  const end = await session.call("flaky", {});
  assert.equal(end.outcome.status === "error" && end.outcome.error.code, "tool_error");
  assert.equal(runs, 1);
  assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_result", "tool_call_finished"]);
});

specTest(
  "returning, or a later activation starting, renews neither a Tool's emitted-bytes budget nor its deadline",
  async (brain) => {
    const { placed, next } = driven();
    const session = await brain.sessions.create({ tools: [placed] });
    const first = session.activation();
    const call = await session.start("driven", {}, { activation: first, deadline: Date.now() + 400 });
    const ctx = await next();
    await ctx.emit("e", "x".repeat(100));
    const later = await session.start("driven", {}, { activation: session.activation() });
    const other = await next();
    assert.equal(typeof await other.emit("e", "x".repeat(100)), "number", "the later activation has its own budget");
    await assert.rejects(ctx.emit("e", "x".repeat(100)), hasCode("budget_exceeded"));
    const end = await call.ended;
    assert.deepEqual([end.cause, end.outcome.status], ["timeout", "timeout"], "the original deadline still ends it");
    assert.ok(hasCode("timeout")(ctx.signal.reason));
    await other.finish();
    assert.equal((await later.ended).cause, "finish");
  },
  { maxEmittedBytes: 150 },
);

specTest(
  "session.activation() reports the budgets the Brain applies (the server's, when remote), on a reopened handle too",
  async (brain) => {
    const { placed, next } = driven();
    const session = await brain.sessions.create({ tools: [placed] });
    const activation = session.activation();
    assert.deepEqual([activation.maxEmittedBytes, activation.maxModelCalls], [200, 3]);
    assert.deepEqual([activation.emittedBytes, activation.modelCalls], [0, 0]);
    const reopened = await brain.sessions.get(session.id);
    const again = reopened.activation();
    assert.deepEqual([again.maxEmittedBytes, again.maxModelCalls], [200, 3]);
    assert.notEqual(again.id, activation.id);
    // The reported byte budget is the one applied: a result of exactly it is committed, one byte more is refused.
    const call = await session.start("driven", {}, { activation });
    const ctx = await next();
    await assert.rejects(ctx.emitResult("x".repeat(201 - resultBytes(""))), hasCode("budget_exceeded"));
    await ctx.finish("x".repeat(200 - resultBytes("")));
    assert.equal((await call.ended).cause, "finish");
  },
  { maxEmittedBytes: 200, maxModelCalls: 3 },
);

/** Spends the emitted-bytes budget: a result that fits, one that does not, then a finish that does not. */
let spentBudget = Promise.withResolvers<JsonValue[]>();
const spender = tool({
  name: "spender",
  description: "Spends its activation's emitted bytes.",
  input: z.object({}),
  run: async (_input, ctx) => {
    const fits = await ctx.emitResult("x".repeat(150 - resultBytes(""))).then(() => "committed", (e) => e.code);
    const over = await ctx.emitResult("y").then(() => "committed", (e) => e.code);
    spentBudget.resolve([fits, over]);
    return ctx.finish("z".repeat(100));
  },
});
let budgeted: ReturnType<typeof extensionService>;
specTest(
  "an Application tool extension's results and a Component's emissions are charged to the same emitted-bytes budget",
  async (brain) => {
    await using _service = budgeted;
    const session = await brain.sessions.create({
      tools: [spender({ env: budgeted.env }), probeTool("emit_loop")({ env: reader })],
    });
    const spent = await session.call("spender", {});
    assert.deepEqual(await spentBudget.promise, ["committed", "budget_exceeded"]);
    assert.deepEqual(
      [spent.cause, spent.outcome.status === "error" && spent.outcome.error.code],
      ["error", "budget_exceeded"],
    );
    assert.deepEqual(await callKinds(session, spent.call), ["tool_call_started", "tool_result", "tool_call_finished"]);
    const looped = await session.call("emit_loop", "x".repeat(40));
    const events = (await callRecords(session, looped.call)).filter((record) => record.kind === "tool_event");
    assert.equal(looped.cause, "finish");
    const kind = events[0]?.kind === "tool_event" ? events[0].event : "";
    assert.equal(events.length, Math.floor(150 / eventBytes(kind, "x".repeat(40))), "the events that fit, no more");
  },
  () => {
    spentBudget = Promise.withResolvers();
    budgeted = extensionService([spender()]);
    return {
      allow: { ...budgeted.allow, workspaceRoot: ".tmp/ws-spec", filesystem: ["read" as const] },
      maxEmittedBytes: 150,
    };
  },
);

specTest(
  "an activation is its session's: a call of another session, or of another Brain's session, that names it is invalid_argument and commits nothing",
  async (brain) => {
    const echo = tool({ name: "echo", description: "Finishes.", input: z.object({}), run: (_i, ctx) => ctx.finish(1) });
    const first = await brain.sessions.create({ tools: [echo()] });
    const second = await brain.sessions.create({ tools: [echo()] });
    const activation = first.activation();
    assert.equal((await first.call("echo", {}, { activation })).cause, "finish");
    await assert.rejects(second.call("echo", {}, { activation }), hasCode("invalid_argument"));
    await assert.rejects(second.start("echo", {}, { activation }), hasCode("invalid_argument"));
    await using other = new Brain();
    const foreign = (await other.sessions.create()).activation();
    await assert.rejects(first.call("echo", {}, { activation: foreign }), hasCode("invalid_argument"));
    assert.deepEqual(await second.read(), []);
    const reopened = await brain.sessions.get(first.id, { tools: [echo()] });
    assert.equal(
      (await reopened.call("echo", {}, { activation })).cause,
      "finish",
      "a handle of the same session takes it",
    );
  },
);
