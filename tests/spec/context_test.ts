import assert from "node:assert/strict";
import { z } from "zod";
import {
  BRAIN_MAX_CANCEL_REASON,
  BRAIN_MAX_LATE_RECORDS,
  BrainError,
  type Finished,
  httpEnv,
  httpTool,
  isFailure,
  type JsonValue,
  ok,
  type Outcome,
  tool,
  type ToolContext,
} from "../../mod.ts";
import { callKinds, callRecords, hasCode, specTest, untilRecord } from "./_brains.ts";
import { extensionService } from "../_support/extension_service.ts";
import { extensionEnv } from "../../src/extension/mod.ts";
import { droppingServer } from "../_support/dropping_server.ts";
import { type Kind, KINDS, toolKinds } from "./_kinds.ts";
import { probeTool, reader } from "../_support/components.ts";
import { runningSandboxes, within } from "../_support/processes.ts";
import { heldCheck } from "../_support/held_check.ts";

/** A Tool that hands its ctx out and stays open until the test finishes it. */
function holder(name = "holder") {
  const contexts: ToolContext<{ tag: { deep: string[] } }>[] = [];
  const arrived = Promise.withResolvers<ToolContext<{ tag: { deep: string[] } }>>();
  const declared = tool({
    name,
    description: "Holds its call open.",
    input: z.object({}),
    options: z.object({ tag: z.object({ deep: z.array(z.string()) }).default({ deep: ["a"] }) }),
    run: (_input, ctx) => {
      contexts.push(ctx);
      arrived.resolve(ctx);
    },
  });
  return { declared, contexts, arrived: arrived.promise };
}

specTest("ctx.deadline is undefined for an unlimited call, and no timer ends it", async (brain) => {
  const { declared, arrived } = holder();
  const session = await brain.sessions.create({ tools: [declared()] });
  const call = await session.start("holder", {});
  const ctx = await arrived;
  assert.equal(ctx.deadline, undefined);
  assert.equal("deadline" in (await session.read())[0], false);
  assert.equal(ctx.signal.aborted, false);
  await ctx.finish("done");
  assert.deepEqual((await call.ended).outcome, ok("done"));
});

specTest("ctx names the call: sessionId and the tool_call_started sequence, after earlier calls", async (brain) => {
  const { declared, contexts } = holder();
  const session = await brain.sessions.create({ tools: [declared()] });
  const first = await session.start("holder", {});
  const second = await session.start("holder", {});
  await untilRecord(session, (record) => record.kind === "tool_returned" && record.call === second.sequence);
  await untilRecord(session, (record) => record.kind === "tool_returned" && record.call === first.sequence);
  const bySequence = new Map(contexts.map((ctx) => [ctx.sequence, ctx]));
  assert.deepEqual([...bySequence.keys()].sort(), [first.sequence, second.sequence].sort());
  for (const ctx of contexts) {
    assert.equal(ctx.sessionId, session.id);
    const [started] = await session.read({ from: ctx.sequence, limit: 1 });
    assert.equal(started.kind, "tool_call_started");
    await ctx.finish();
  }
  await first.ended;
  await second.ended;
});

specTest(
  "ctx.options are the placement's options, parsed once with defaults and frozen to the leaves",
  async (brain) => {
    const { declared, contexts } = holder();
    const session = await brain.sessions.create({ tools: [declared()] });
    const calls = [await session.start("holder", {}), await session.start("holder", {})];
    for (const call of calls) await untilRecord(session, (r) => r.kind === "tool_returned" && r.call === call.sequence);
    const [a, b] = contexts;
    assert.deepEqual(a.options, { tag: { deep: ["a"] } });
    assert.equal(a.options, b.options, "parsed once per placement");
    assert.ok(Object.isFrozen(a.options) && Object.isFrozen(a.options.tag) && Object.isFrozen(a.options.tag.deep));
    assert.throws(() => (a.options.tag.deep as string[]).push("b"), TypeError);
    for (const ctx of contexts) await ctx.finish();
  },
);

specTest(
  "ctx.emit without data commits null; emit resolves with the committed sequence before the result",
  async (brain) => {
    const emitter = tool({
      name: "emitter",
      description: "Emits.",
      input: z.object({}),
      run: async (_input, ctx) => {
        const first = await ctx.emit("bare");
        const second = await ctx.emit("with_data", { n: 1 });
        const result = await ctx.emitResult({ first, second });
        return ctx.finish({ first, second, result });
      },
    });
    const session = await brain.sessions.create({ tools: [emitter()] });
    const end = await session.call("emitter", {});
    const records = await callRecords(session, end.call);
    assert.deepEqual(records.map((r) => [r.sequence, r.kind]), [
      [end.call, "tool_call_started"],
      [end.call + 1, "tool_event"],
      [end.call + 2, "tool_event"],
      [end.call + 3, "tool_result"],
      [end.call + 4, "tool_result"],
      [end.call + 5, "tool_call_finished"],
    ]);
    assert.deepEqual(records[1].kind === "tool_event" && [records[1].event, records[1].data], ["bare", null]);
    assert.deepEqual(end.outcome, ok({ first: end.call + 1, second: end.call + 2, result: end.call + 3 }));
  },
);

specTest(
  "emitResult and finish carry content beside the structured outcome, which content never replaces",
  async (brain) => {
    const presenter = tool({
      name: "presenter",
      description: "Presents.",
      input: z.object({}),
      output: z.object({ n: z.number() }),
      run: async (_input, ctx) => {
        await ctx.emitResult({ n: 1 }, { content: "one" });
        return ctx.finish({ n: 2 }, { content: "two" });
      },
    });
    const session = await brain.sessions.create({ tools: [presenter()] });
    const end = await session.call("presenter", {});
    assert.deepEqual(end.outcome, ok({ n: 2 }));
    const results = (await callRecords(session, end.call)).filter((r) => r.kind === "tool_result");
    assert.deepEqual(results.map((r) => r.kind === "tool_result" && [r.outcome, r.content]), [
      [ok({ n: 1 }), "one"],
      [ok({ n: 2 }), "two"],
    ]);
  },
);

specTest(
  "a deadline ends the call timeout no earlier than the deadline; the failure says why the caller stopped",
  async (brain) => {
    const { declared, arrived } = holder();
    const session = await brain.sessions.create({ tools: [declared()] });
    const deadline = Date.now() + 150;
    const call = await session.start("holder", {}, { deadline });
    const ctx = await arrived;
    assert.equal(ctx.deadline, deadline);
    const end = await call.ended;
    assert.ok(Date.now() >= deadline, "ended before its deadline");
    assert.deepEqual([end.cause, end.outcome.status, isFailure(end.outcome)], ["timeout", "timeout", true]);
    const finished = (await callRecords(session, call.sequence)).at(-1)!;
    assert.equal(finished.kind, "tool_call_finished");
    assert.ok(finished.at >= deadline, `committed at ${finished.at}, before the deadline ${deadline}`);
    assert.ok(ctx.signal.aborted);
    assert.ok(ctx.signal.reason instanceof BrainError && ctx.signal.reason.code === "timeout");
  },
);

specTest(
  "cancel(message) ends the call cancelled with that message; the Tool's signal says cancelled",
  async (brain) => {
    const { declared, arrived } = holder();
    const session = await brain.sessions.create({ tools: [declared()] });
    const call = await session.start("holder", {});
    const ctx = await arrived;
    const end = await call.cancel("the user pressed stop");
    assert.deepEqual([end.cause, end.outcome], ["cancelled", {
      status: "cancelled",
      message: "the user pressed stop",
    }]);
    assert.deepEqual(await call.ended, end);
    assert.ok(ctx.signal.reason instanceof BrainError && ctx.signal.reason.code === "cancelled");
  },
);

specTest(
  "a cancel reason of exactly BRAIN_MAX_CANCEL_REASON characters is kept; one more is payload_too_large",
  async (brain) => {
    const { declared, arrived } = holder();
    const session = await brain.sessions.create({ tools: [declared()] });
    const call = await session.start("holder", {});
    await arrived;
    await assert.rejects(call.cancel("x".repeat(BRAIN_MAX_CANCEL_REASON + 1)), hasCode("payload_too_large"));
    await assert.rejects(call.cancel(42 as never), hasCode("invalid_argument"));
    const reason = "é".repeat(BRAIN_MAX_CANCEL_REASON);
    const end = await call.cancel(reason);
    assert.deepEqual(end.outcome, { status: "cancelled", message: reason });
    assert.deepEqual(
      (await callKinds(session, call.sequence)).filter((kind) => kind === "tool_call_finished"),
      ["tool_call_finished"],
    );
  },
);

specTest(
  "the first terminal cause is retained: a finish after the deadline is recorded late and resolves late",
  async (brain) => {
    const { declared, arrived } = holder();
    const session = await brain.sessions.create({ tools: [declared()] });
    const call = await session.start("holder", {}, { timeoutMs: 50 });
    const ctx = await arrived;
    const end = await call.ended;
    const done: Finished = await ctx.finish("too late");
    assert.deepEqual([done.late, done.sequence], [true, end.sequence]);
    const records = await callRecords(session, call.sequence);
    assert.deepEqual(records.map((r) => r.kind), [
      "tool_call_started",
      "tool_returned",
      "tool_call_finished",
      "tool_call_late",
    ]);
    assert.deepEqual(records[3].kind === "tool_call_late" && records[3].cause, "finish");
    assert.deepEqual(await call.ended, end);
    assert.equal(end.cause, "timeout");
  },
);

specTest("a cancel after the Tool finished changes nothing: one terminal record, the first outcome", async (brain) => {
  const { declared, arrived } = holder();
  const session = await brain.sessions.create({ tools: [declared()] });
  const call = await session.start("holder", {});
  const ctx = await arrived;
  await ctx.finish("first");
  const end = await call.ended;
  assert.deepEqual(await call.cancel("too late"), end);
  assert.deepEqual(end.outcome, ok("first"));
  await session.call(holder("sentinel").declared(), {}, { timeoutMs: 1 }).catch(() => {});
  const records = await callRecords(session, call.sequence);
  const kinds = records.map((record) => record.kind);
  assert.equal(kinds.filter((kind) => kind === "tool_call_finished").length, 1);
  assert.deepEqual(kinds.slice(-2), ["tool_call_finished", "tool_call_late"]);
  const late = records.at(-1)!;
  assert.equal(late.kind === "tool_call_late" && late.cause, "cancelled");
});

specTest("a call started with an already aborted signal ends cancelled before the Tool runs", async (brain) => {
  const { declared, contexts } = holder();
  const session = await brain.sessions.create({ tools: [declared()] });
  const call = await session.start("holder", {}, { signal: AbortSignal.abort() });
  const end = await call.ended;
  assert.equal(end.cause, "cancelled");
  assert.deepEqual(await callKinds(session, call.sequence), ["tool_call_started", "tool_call_finished"]);
  assert.equal(contexts.length, 0, "the Tool never ran");
});

specTest("racing finish, cancel and the deadline leaves exactly one terminal record per call", async (brain) => {
  const racer = tool({
    name: "racer",
    description: "Finishes at once.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish("raced"),
  });
  const session = await brain.sessions.create({ tools: [racer()] });
  const calls = await Promise.all(
    Array.from({ length: 20 }, () => session.start("racer", {}, { deadline: Date.now() + 2 })),
  );
  await Promise.all(calls.map((call) => call.cancel().catch(() => {})));
  const ends = await Promise.all(calls.map((call) => call.ended));
  const records = await session.read();
  for (const [i, call] of calls.entries()) {
    const terminals = records.filter((r) => r.kind === "tool_call_finished" && r.call === call.sequence);
    assert.equal(terminals.length, 1);
    assert.equal(terminals[0].sequence, ends[i].sequence);
    assert.ok(["finish", "cancelled", "timeout"].includes(ends[i].cause));
  }
  assert.deepEqual(records.map((r) => r.sequence), records.map((_, i) => i + 1), "dense sequences");
});

specTest(
  "late reports are recorded up to BRAIN_MAX_LATE_RECORDS; the one after is refused budget_exceeded",
  async (brain) => {
    const { declared, arrived } = holder();
    const session = await brain.sessions.create({ tools: [declared()] });
    const call = await session.start("holder", {});
    const ctx = await arrived;
    await call.cancel();
    const lates: unknown[] = [];
    for (let i = 0; i < BRAIN_MAX_LATE_RECORDS + 1; i++) {
      lates.push(await ctx.finish().then((done) => done.late, (error) => error));
    }
    assert.deepEqual(lates.slice(0, BRAIN_MAX_LATE_RECORDS), Array(BRAIN_MAX_LATE_RECORDS).fill(true));
    assert.ok(hasCode("budget_exceeded")(lates.at(-1)), String(lates.at(-1)));
    const kinds = await callKinds(session, call.sequence);
    assert.equal(kinds.filter((kind) => kind === "tool_call_late").length, BRAIN_MAX_LATE_RECORDS);
  },
);

specTest(
  "finish waits for the emissions admitted before it, in call order; emissions after it are refused",
  async (brain) => {
    const outcomes = Promise.withResolvers<JsonValue[]>();
    const burst = tool({
      name: "burst",
      description: "Emits without awaiting, then finishes.",
      input: z.object({}),
      run: async (_input, ctx) => {
        const pending = [ctx.emit("a", 1), ctx.emitResult("r"), ctx.emit("b", 2)];
        const finished = ctx.finish("done");
        const after = ctx.emit("c", 3).then(() => "committed", (error: BrainError) => error.code);
        const sequences = await Promise.all(pending);
        await finished;
        outcomes.resolve([...sequences, await after]);
      },
    });
    const session = await brain.sessions.create({ tools: [burst()] });
    const end = await session.call("burst", {});
    const records = await callRecords(session, end.call);
    assert.deepEqual(records.map((r) => r.kind), [
      "tool_call_started",
      "tool_event",
      "tool_result",
      "tool_event",
      "tool_result",
      "tool_call_finished",
    ]);
    assert.deepEqual(await outcomes.promise, [end.call + 1, end.call + 2, end.call + 3, "call_finished"]);
  },
);

specTest(
  "an already expired deadline ends the call timeout before input validation or customer code",
  async (brain) => {
    let validated = 0;
    let ran = 0;
    const guarded = tool({
      name: "guarded",
      description: "Counts.",
      input: z.object({ n: z.number() }).refine(() => ++validated > 0),
      run: (_input, ctx) => {
        ran++;
        return ctx.finish(null);
      },
    });
    const session = await brain.sessions.create({ tools: [guarded()] });
    const end = await session.call("guarded", { n: 1 }, { deadline: Date.now() - 1 });
    assert.deepEqual([end.cause, end.outcome.status], ["timeout", "timeout"]);
    const zero = await session.call("guarded", { n: 1 }, { timeoutMs: 0 });
    assert.deepEqual([zero.cause, zero.outcome.status], ["timeout", "timeout"]);
    assert.deepEqual([validated, ran], [0, 0]);
    assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_call_finished"]);
  },
);

specTest(
  "a deadline long past (a minute ago) ends the call timeout without running it, through call and start alike",
  async (brain) => {
    let ran = 0;
    const counted = tool({
      name: "counted",
      description: "Counts runs.",
      input: z.object({}),
      run: (_input, ctx) => (ran++, ctx.finish(null)),
    });
    const session = await brain.sessions.create({ tools: [counted()] });
    const called = await session.call("counted", {}, { deadline: Date.now() - 60_000 });
    const started = await session.start("counted", {}, { deadline: Date.now() - 60_000 });
    for (const end of [called, await started.ended]) {
      assert.deepEqual([end.cause, end.outcome.status], ["timeout", "timeout"]);
      assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_call_finished"]);
    }
    assert.equal(ran, 0);
  },
);

for (const stop of ["deadline", "cancel"] as const) {
  specTest(`async input checks: ${stop} while one waits prevents the run and any late result`, async (brain) => {
    const held = heldCheck();
    let ran = 0;
    const slow = tool({
      name: "slow",
      description: "Validates slowly.",
      input: z.object({ n: z.number() }).refine(held.check),
      run: (_input, ctx) => (ran++, ctx.finish("ran")),
    });
    const session = await brain.sessions.create({ tools: [slow()] });
    const call = await session.start("slow", { n: 1 }, stop === "deadline" ? { timeoutMs: 100 } : {});
    await held.entered;
    const end = stop === "deadline" ? await call.ended : await call.cancel();
    assert.deepEqual(end.cause, stop === "deadline" ? "timeout" : "cancelled");
    held.open();
    await held.passed;
    // The sentinel call commits after anything the stopped call could still have written.
    assert.equal((await session.call("slow", { n: 2 })).cause, "finish");
    assert.equal(ran, 1, "only the sentinel ran");
    assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_call_finished"]);
  });
}

specTest("async output checks consume the deadline: expiry while one waits prevents the late result", async (brain) => {
  const held = heldCheck();
  const slow = tool({
    name: "slow_output",
    description: "Validates its output slowly.",
    input: z.object({}),
    output: z.string().refine(held.check),
    run: (_input, ctx) => ctx.finish("value"),
  });
  const session = await brain.sessions.create({ tools: [slow()] });
  const call = await session.start("slow_output", {}, { timeoutMs: 100 });
  await held.entered;
  assert.equal((await call.ended).cause, "timeout");
  held.open();
  await held.passed;
  assert.equal((await session.call("slow_output", {})).cause, "finish", "the sentinel");
  const kinds = await callKinds(session, call.sequence);
  assert.equal(kinds.includes("tool_result"), false, kinds.join());
});

specTest("cancelling during async output checks prevents the late result", async (brain) => {
  const checking = Promise.withResolvers<void>();
  const release = Promise.withResolvers<boolean>();
  const slow = tool({
    name: "slow_output",
    description: "Validates its output slowly.",
    input: z.object({}),
    output: z.string().refine(() => {
      checking.resolve();
      return release.promise;
    }),
    run: (_input, ctx) => ctx.finish("value"),
  });
  const session = await brain.sessions.create({ tools: [slow()] });
  const call = await session.start("slow_output", {});
  await checking.promise;
  const end = await call.cancel("enough");
  release.resolve(true);
  assert.deepEqual([end.cause, end.outcome.status], ["cancelled", "cancelled"]);
  const sentinel = await session.start("slow_output", {});
  await sentinel.cancel();
  const kinds = await callKinds(session, call.sequence);
  assert.equal(kinds.includes("tool_result"), false, kinds.join());
});

specTest(
  "bad ctx.emit and emitResult arguments reject invalid_argument, commit nothing and leave the call open",
  async (brain) => {
    const codes = Promise.withResolvers<JsonValue[]>();
    const sloppy = tool({
      name: "sloppy",
      description: "Emits badly.",
      input: z.object({}),
      run: async (_input, ctx) => {
        const attempts: (() => Promise<unknown>)[] = [
          () => ctx.emit("", 1),
          () => ctx.emit(5 as never, 1),
          () => ctx.emit("e", { n: 1n } as never),
          () => ctx.emit("e", Number.NaN as never),
          () => ctx.emit("e", { f: () => 1 } as never),
          () => ctx.emitResult("x", { content: 5 as never }),
          () => ctx.emitResult("x", "text" as never),
        ];
        const answers: JsonValue[] = [];
        for (const attempt of attempts) {
          answers.push(
            await (async () => await attempt())().then(() => "committed", (error) => error?.code ?? String(error)),
          );
        }
        codes.resolve(answers);
        return ctx.finish("still open");
      },
    });
    const session = await brain.sessions.create({ tools: [sloppy()] });
    const end = await session.call("sloppy", {});
    assert.deepEqual(await codes.promise, Array(7).fill("invalid_argument"));
    assert.deepEqual(end.outcome, ok("still open"));
    assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_result", "tool_call_finished"]);
  },
);

specTest("a finish with content that is not text ends the call with an error, never a stuck call", async (brain) => {
  const sloppy = tool({
    name: "sloppy",
    description: "Finishes badly.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish("x", { content: { text: "no" } as never }),
  });
  const session = await brain.sessions.create({ tools: [sloppy()] });
  const end = await session.call("sloppy", {});
  assert.equal(end.outcome.status, "error");
  const records = await callRecords(session, end.call);
  assert.equal(records.some((record) => record.kind === "tool_result" && record.content !== undefined), false);
});

/** Tries to finish with content alone, then finishes with a value and content, saying what the first try got. */
const contentAlone = (name: string) =>
  tool({
    name,
    description: "Finishes with content but no value, then properly.",
    input: z.object({}),
    options: z.object({ where: z.enum(["local", "extension"]) }),
    run: async (_input, ctx) => {
      const first = await ctx.finish(undefined, { content: "All done." }).then(() => "finished", (error) => error.code);
      return ctx.finish({ first }, { content: "Done, with a value." });
    },
  });
let contentService: ReturnType<typeof extensionService>;
specTest(
  "finish(undefined, { content }) is refused invalid_argument at the call, which stays open and commits nothing, in the application, an extension and a Component",
  async (brain) => {
    await using _service = contentService;
    const session = await brain.sessions.create({
      tools: [
        contentAlone("content_alone")({ where: "local" }),
        contentAlone("content_alone_ext")({ env: contentService.env, where: "extension" }),
      ],
    });
    const component = await brain.sessions.create({ tools: [probeTool("content_alone")({ env: reader })] });
    // The probe returns and finishes with content alone, then (both refused, or it fails) with its input.
    const probed = await component.call("content_alone", { status: "ok", value: "the input" });
    assert.deepEqual(probed.outcome, ok("the input"));
    assert.deepEqual(await callKinds(component, probed.call), [
      "tool_call_started",
      "tool_result",
      "tool_call_finished",
    ]);
    for (const name of ["content_alone", "content_alone_ext"]) {
      const end = await session.call(name, {});
      assert.deepEqual(end.outcome, ok({ first: "invalid_argument" }), name);
      const records = await callRecords(session, end.call);
      assert.deepEqual(
        records.map((r) => r.kind === "tool_result" ? [r.kind, r.outcome, r.content] : r.kind),
        [
          "tool_call_started",
          ["tool_result", ok({ first: "invalid_argument" }), "Done, with a value."],
          "tool_call_finished",
        ],
        name,
      );
    }
  },
  () => {
    contentService = extensionService([contentAlone("content_alone_ext")({ where: "extension" })]);
    return { allow: { ...contentService.allow, workspaceRoot: ".tmp/ws-spec", filesystem: ["read"] } };
  },
);

specTest("a second ctx.finish is recorded late and resolves late with the first terminal record", async (brain) => {
  const seen = Promise.withResolvers<{ first: [number, boolean]; second: [number, boolean] }>();
  const twice = tool({
    name: "twice",
    description: "Finishes twice.",
    input: z.object({}),
    run: async (_input, ctx) => {
      const first = await ctx.finish("first");
      const second = await ctx.finish("second");
      seen.resolve({ first: [first.sequence, first.late], second: [second.sequence, second.late] });
      return second;
    },
  });
  const session = await brain.sessions.create({ tools: [twice()] });
  const end = await session.call("twice", {});
  assert.deepEqual(await seen.promise, { first: [end.sequence, false], second: [end.sequence, true] });
  assert.deepEqual(end.outcome, ok("first"));
  assert.deepEqual(await callKinds(session, end.call), [
    "tool_call_started",
    "tool_result",
    "tool_call_finished",
    "tool_call_late",
  ]);
});

/** An Application tool extension Tool that hands its ctx out and stays open. */
function extensionHolder() {
  const arrived = Promise.withResolvers<ToolContext>();
  const declared = tool({
    name: "held",
    description: "Holds its call open in the extension.",
    input: z.object({}),
    run: (_input, ctx) => void arrived.resolve(ctx as unknown as ToolContext),
  });
  return { declared, arrived: arrived.promise };
}

/** Resolves with the signal's reason once it aborts. */
const abortReason = (signal: AbortSignal) =>
  new Promise<unknown>((resolve) =>
    signal.aborted ? resolve(signal.reason) : signal.addEventListener("abort", () => resolve(signal.reason))
  );

let timed: ReturnType<typeof extensionService> & { arrived: Promise<ToolContext> };
specTest(
  "in an Application tool extension the deadline also returns timeout and its ctx.signal says timeout",
  async (brain) => {
    await using _service = timed;
    const session = await brain.sessions.create({ tools: [extensionHolder().declared({ env: timed.env })] });
    const deadline = Date.now() + 150;
    const call = await session.start("held", {}, { deadline });
    const ctx = await timed.arrived;
    assert.equal(ctx.deadline, deadline);
    const end = await call.ended;
    assert.deepEqual([end.cause, end.outcome.status], ["timeout", "timeout"]);
    assert.ok(hasCode("timeout")(await abortReason(ctx.signal)));
  },
  () => {
    const { declared, arrived } = extensionHolder();
    const service = extensionService([declared()]);
    timed = Object.assign(service, { arrived });
    return { allow: service.allow };
  },
);

let skewed: ReturnType<typeof extensionService>;
specTest(
  "an extension whose clock reaches the deadline first still leaves the call timeout, never lifetime_exceeded",
  async (brain) => {
    await using _service = skewed;
    const session = await brain.sessions.create({ tools: [extensionHolder().declared({ env: skewed.env })] });
    const end = await session.call("held", {}, { timeoutMs: 200 });
    assert.deepEqual([end.cause, end.outcome.status], ["timeout", "timeout"]);
  },
  () => {
    // The extension sees a deadline 150 ms earlier than Brain's, as a clock running ahead would.
    skewed = extensionService([extensionHolder().declared()], {
      rewrite: (invocation) => ({ ...invocation, deadline: (invocation.deadline as number) - 150 }),
    });
    return { allow: skewed.allow };
  },
);

for (const partial of [false, true]) {
  let dropping: ReturnType<typeof droppingServer>;
  specTest(
    `an HTTP or extension Tool whose connection is lost after the request was sent${
      partial ? " (mid-body)" : ""
    } ends unknown, sent once`,
    async (brain) => {
      await using server = dropping;
      const post = tool({
        name: "post",
        description: "Posts once.",
        input: z.object({ n: z.number() }),
        implementation: () => ({ type: "http_json", method: "POST", path: "/items" }),
      });
      const send = httpTool({ name: "send", description: "Sends once.", input: z.object({}), url: server.url });
      const session = await brain.sessions.create({
        tools: [
          post({ env: httpEnv({ name: "api", baseUrl: server.url }) }),
          send(),
          extensionHolder().declared({ env: extensionEnv({ name: "app-http", url: server.url }) }),
        ],
      });
      for (const [name, input] of [["post", { n: 1 }], ["send", {}], ["held", {}]] as const) {
        const end = await session.call(name, input, { timeoutMs: 5_000 });
        assert.deepEqual([end.cause, end.outcome.status], ["unknown", "unknown"], name);
      }
      assert.equal(server.received, 3, "each call was sent once, never again");
    },
    () => {
      dropping = droppingServer({ partial });
      return { allow: { net: [dropping.host] } };
    },
  );
}

specTest(
  "an HTTP or extension Tool that never reached its server is a known failure: error, never unknown",
  async (brain) => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = listener.addr as Deno.NetAddr;
    listener.close();
    const send = httpTool({
      name: "send",
      description: "Sends once.",
      input: z.object({}),
      url: `http://127.0.0.1:${port}`,
    });
    const env = extensionEnv({ name: "app-http", url: `http://127.0.0.1:${port}` });
    const session = await brain.sessions.create({ tools: [send(), extensionHolder().declared({ env })] });
    for (const [name, code] of [["send", "http_error"], ["held", "connection_failed"]]) {
      const end = await session.call(name, {}, { timeoutMs: 5_000 });
      assert.equal(end.outcome.status === "error" && end.outcome.error.code, code, name);
      assert.notEqual(end.cause, "unknown", name);
    }
  },
  { allow: { net: ["127.0.0.1"] } },
);

let cancelling: ReturnType<typeof extensionService> & { arrived: Promise<ToolContext> };
specTest(
  "cancelling a call in an Application tool extension aborts the Tool's ctx.signal with cancelled",
  async (brain) => {
    await using _service = cancelling;
    const session = await brain.sessions.create({ tools: [extensionHolder().declared({ env: cancelling.env })] });
    const call = await session.start("held", {});
    const ctx = await cancelling.arrived;
    const end = await call.cancel("the user pressed stop");
    assert.deepEqual(end.outcome, { status: "cancelled", message: "the user pressed stop" });
    assert.ok(hasCode("cancelled")(await abortReason(ctx.signal)));
    await assert.rejects(ctx.emitResult("late"), hasCode("lifetime_exceeded"));
  },
  () => {
    const { declared, arrived } = extensionHolder();
    const service = extensionService([declared()]);
    cancelling = Object.assign(service, { arrived });
    return { allow: service.allow };
  },
);

let kinds: ReturnType<typeof toolKinds>;
specTest(
  "whatever the Tool kind, the deadline returns timeout and SDK cancellation and session end return cancelled, one terminal record, no result and nothing late each",
  async (brain) => {
    await using _servers = kinds;
    const outcomes = new Map<Kind, Outcome[]>();
    for (const kind of KINDS) {
      const session = await brain.sessions.create({ tools: kinds.place(kind) });
      const timed = await session.call("spin", {}, { timeoutMs: 100 });
      const running = await session.start("spin", {});
      await kinds.reached(kind, session, running.sequence);
      const cancelled = await running.cancel("the user pressed stop");
      assert.deepEqual([timed.cause, cancelled.cause], ["timeout", "cancelled"], kind);
      assert.deepEqual(cancelled.outcome, { status: "cancelled", message: "the user pressed stop" }, kind);
      assert.ok(isFailure(timed.outcome) && isFailure(cancelled.outcome), kind);
      // The sentinel call runs after anything the stopped calls' placements could still have reported.
      assert.equal((await session.call("echo", { value: 1 })).cause, "finish", kind);
      const open = await session.start("spin", {});
      await kinds.reached(kind, session, open.sequence);
      await session.end();
      const ended = await open.ended;
      assert.deepEqual([ended.cause, ended.outcome.status], ["cancelled", "cancelled"], kind);
      // Ending released the handlers: the same Tools take the session again, for its sentinel call.
      const again = await brain.sessions.get(session.id, { tools: kinds.place(kind) });
      assert.equal((await again.call("echo", { value: 2 })).cause, "finish", kind);
      for (const end of [timed, cancelled, ended]) {
        const kinds = await callKinds(session, end.call);
        assert.equal(kinds.at(-1), "tool_call_finished", `${kind}: nothing after the end: ${kinds.join()}`);
        assert.deepEqual(kinds.filter((k) => k === "tool_call_finished"), ["tool_call_finished"], kind);
        assert.equal(kinds.includes("tool_result"), false, `${kind}: ${kinds.join()}`);
      }
      outcomes.set(kind, [timed.outcome, cancelled.outcome, ended.outcome]);
    }
    for (const kind of KINDS) assert.deepEqual(outcomes.get(kind), outcomes.get("in-process"), kind);
  },
  () => {
    kinds = toolKinds();
    return { allow: kinds.allow };
  },
);

let named: ReturnType<typeof extensionService> & { arrived: Promise<ToolContext> };
specTest(
  "in an Application tool extension ctx names the call too: sessionId, the tool_call_started sequence, no deadline when unlimited",
  async (brain) => {
    await using _service = named;
    const earlier = tool({
      name: "earlier",
      description: "Ends at once.",
      input: z.object({}),
      run: (_i, ctx) => ctx.finish(),
    });
    const session = await brain.sessions.create({ tools: [earlier(), extensionHolder().declared({ env: named.env })] });
    await session.call("earlier", {});
    const call = await session.start("held", {});
    const ctx = await named.arrived;
    assert.deepEqual([ctx.sessionId, ctx.sequence, ctx.deadline], [session.id, call.sequence, undefined]);
    const [started] = await session.read({ from: ctx.sequence, limit: 1 });
    assert.deepEqual(started.kind === "tool_call_started" && started.tool, "held");
    assert.ok(Object.isFrozen(ctx.options));
    await ctx.finish("named");
    assert.deepEqual((await call.ended).outcome, ok("named"));
  },
  () => {
    const { declared, arrived } = extensionHolder();
    const service = extensionService([declared()]);
    named = Object.assign(service, { arrived });
    return { allow: service.allow };
  },
);

specTest(
  "a Component whose sandbox is killed mid-call (a lost connection after dispatch) ends unknown, and the next call runs",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [probeTool("spin")({ env: reader })] });
    const call = await session.start("spin", null);
    await untilRecord(session, (record) => record.kind === "tool_event" && record.call === call.sequence);
    let pids: number[] = [];
    // A remote Brain's sandboxes are its server's children: the server runs in this process here.
    await within(5_000, "the guest to spin", async () => (pids = await runningSandboxes(true)).length > 0);
    for (const pid of pids) Deno.kill(pid, "SIGKILL");
    const end = await call.ended;
    assert.deepEqual([end.cause, end.outcome.status], ["unknown", "unknown"]);
    assert.match(end.outcome.status === "unknown" ? end.outcome.message ?? "" : "", /killed \(signal SIGKILL\)/);
    const again = await session.call("spin", null, { timeoutMs: 200 });
    assert.equal(again.cause, "timeout", "the next call gets a fresh sandbox");
  },
  { allow: { workspaceRoot: ".tmp/ws-spec", filesystem: ["read"] } },
);

specTest(
  "closing the Brain ends an open call cancelled and aborts its ctx.signal; its later emit, emitResult and model are call_finished",
  async (brain) => {
    const { declared, arrived } = holder();
    const session = await brain.sessions.create({ tools: [declared()] });
    const call = await session.start("holder", {});
    const ctx = await arrived;
    await brain.close();
    assert.deepEqual((await call.ended).outcome, { status: "cancelled", message: "the session ended" });
    assert.ok(hasCode("cancelled")(ctx.signal.reason));
    const refused = (attempt: () => Promise<unknown>) =>
      (async () => await attempt())().then(() => "committed", (error) => error.code);
    assert.deepEqual(
      [
        await refused(() => ctx.emit("late")),
        await refused(() => ctx.emitResult("late")),
        await refused(() => ctx.model({ messages: [{ role: "user", content: "late" }] })),
      ],
      ["call_finished", "call_finished", "call_finished"],
    );
  },
);
