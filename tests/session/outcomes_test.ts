import assert from "node:assert/strict";
import { z } from "zod";
import { fail, ok, type Outcome, tool } from "../../mod.ts";
import { callKinds, callRecords, untilReturned } from "../_support/call_records.ts";
import { withDeadline } from "../_support/deadline.ts";
import { hasCode } from "../_support/has_code.ts";
import { embeddedSession } from "../_support/embedded_session.ts";

const returning = (name: string, value: () => unknown, output?: z.ZodType) =>
  tool({ name, description: "A test Tool.", input: z.object({}), output, run: () => value() })();

const finishing = (name: string, value: () => unknown, output?: z.ZodType) =>
  tool({
    name,
    description: "A test Tool.",
    input: z.object({}),
    output,
    run: (_i, ctx) => ctx.finish(value() as never),
  })();

const errorCode = (outcome: Outcome) => outcome.status === "error" ? outcome.error.code : outcome.status;

Deno.test("return ctx.finish(value) publishes one result and finishes", async () => {
  await using session = await embeddedSession([finishing("f", () => ({ n: 1 }))]);
  const end = await session.call("f", {});
  assert.deepEqual(end.outcome, ok({ n: 1 }));
  assert.equal(end.cause, "finish");
  assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_result", "tool_call_finished"]);
});

Deno.test("return value publishes one result, ends the synchronous phase and leaves the Tool open", async () => {
  await using session = await embeddedSession([returning("r", () => ({ n: 2 }))]);
  const call = await session.start("r", {});
  await untilReturned(session, call.sequence);
  assert.deepEqual(await callKinds(session, call.sequence), ["tool_call_started", "tool_result", "tool_returned"]);
  const end = await call.cancel();
  assert.equal(end.cause, "cancelled");
});

Deno.test("returning nothing publishes no result and the Tool stays open for later finish", async () => {
  let later: (() => Promise<unknown>) | undefined;
  const open = tool({
    name: "open",
    description: "A test Tool.",
    input: z.object({}),
    run: (_input, ctx) => {
      later = async () => {
        await ctx.emitResult({ step: 1 });
        return ctx.finish({ step: 2 });
      };
    },
  });
  await using session = await embeddedSession([open()]);
  const call = await session.start("open", {});
  await untilReturned(session, call.sequence);
  assert.deepEqual(await callKinds(session, call.sequence), ["tool_call_started", "tool_returned"]);
  await later!();
  const end = await call.ended;
  assert.deepEqual(end.outcome, ok({ step: 2 }));
  assert.deepEqual(await callKinds(session, call.sequence), [
    "tool_call_started",
    "tool_returned",
    "tool_result",
    "tool_result",
    "tool_call_finished",
  ]);
});

Deno.test("await ctx.finish(); return; finishes without another result", async () => {
  const quiet = tool({
    name: "quiet",
    description: "A test Tool.",
    input: z.object({}),
    run: async (_input, ctx) => {
      await ctx.emitResult("partial");
      await ctx.finish();
      return;
    },
  });
  const silent = tool({
    name: "silent",
    description: "A test Tool.",
    input: z.object({}),
    run: async (_input, ctx) => {
      await ctx.finish();
    },
  });
  await using session = await embeddedSession([quiet(), silent()]);
  const end = await session.call("quiet", {});
  assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_result", "tool_call_finished"]);
  assert.deepEqual(end.outcome, ok("partial"), "the final outcome is the last published result");
  const none = await session.call("silent", {});
  assert.deepEqual(await callKinds(session, none.call), ["tool_call_started", "tool_call_finished"]);
  assert.deepEqual(none.outcome, ok(null));
});

Deno.test("an error outcome keeps code, message, retryable and details, and terminates", async () => {
  const outcome = fail("not_found", "no record 7", { retryable: true, details: { id: "7", tried: [1, 2] } });
  await using session = await embeddedSession([finishing("f", () => outcome), returning("r", () => outcome)]);
  for (const name of ["f", "r"]) {
    const end = await session.call(name, {});
    assert.deepEqual(end.outcome, outcome);
    assert.equal(end.cause, "finish");
    assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_result", "tool_call_finished"]);
  }
});

Deno.test("a thrown exception becomes tool_error", async () => {
  const thrower = tool({
    name: "thrower",
    description: "A test Tool.",
    input: z.object({}),
    run: () => {
      throw new RangeError("out of range");
    },
  });
  await using session = await embeddedSession([thrower()]);
  const end = await session.call("thrower", {});
  assert.equal(end.cause, "error");
  assert.deepEqual(end.outcome, fail("tool_error", "out of range", { details: { name: "RangeError" } }));
});

Deno.test("a malformed envelope with a reserved status becomes invalid_output", async () => {
  const malformed = [{ status: "error", message: "no error object" }, { status: "ok" }, { status: "timeout", x: 1 }];
  const tools = malformed.flatMap((value, index) => [
    finishing(`f${index}`, () => value),
    returning(`r${index}`, () => value),
  ]);
  await using session = await embeddedSession(tools);
  for (const placed of tools) {
    const end = await session.call(placed.tool.name, {});
    assert.equal(errorCode(end.outcome), "invalid_output", placed.tool.name);
    assert.equal(end.cause, "error");
  }
});

Deno.test("business data with a reserved status passes as an explicit ok value, uninspected", async () => {
  const data = { status: "error", error: "this is a record, not a failure" };
  const output = z.object({ status: z.string(), error: z.string() });
  await using session = await embeddedSession([finishing("f", () => ok(data), output)]);
  const end = await session.call("f", {});
  assert.deepEqual(end.outcome, ok(data));
});

Deno.test("other status values are ordinary data and are validated as output", async () => {
  const output = z.object({ status: z.literal("pending") });
  await using session = await embeddedSession([
    finishing("good", () => ({ status: "pending" }), output),
    finishing("bad", () => ({ status: "done" }), output),
  ]);
  assert.deepEqual((await session.call("good", {})).outcome, ok({ status: "pending" }));
  assert.equal(errorCode((await session.call("bad", {})).outcome), "invalid_output");
});

Deno.test("output validation applies to ordinary output and ok.value, with transforms; failures bypass it", async () => {
  const output = z.object({ n: z.string().transform(Number).pipe(z.number()) });
  await using session = await embeddedSession([
    finishing("plain", () => ({ n: "5" }), output),
    finishing("explicit", () => ok({ n: "6" } as never), output),
    finishing("invalid", () => ({ n: 5 }), output),
    finishing("failure", () => fail("nope", "not validated"), output),
  ]);
  assert.deepEqual((await session.call("plain", {})).outcome, ok({ n: 5 }));
  assert.deepEqual((await session.call("explicit", {})).outcome, ok({ n: 6 }));
  const invalid = await session.call("invalid", {});
  assert.equal(errorCode(invalid.outcome), "invalid_output");
  assert.ok(invalid.outcome.status === "error" && Array.isArray(invalid.outcome.error.details));
  assert.deepEqual((await session.call("failure", {})).outcome, fail("nope", "not validated"));
});

Deno.test("the final value must be JSON after transforms", async () => {
  const values: Record<string, () => unknown> = {
    undefined_field: () => ({ a: undefined }),
    nan: () => NaN,
    infinity: () => ({ n: -Infinity }),
    bigint: () => 10n,
    instance: () => new URL("https://example.com"),
  };
  const toDate = z.string().transform((text) => new Date(text)).pipe(z.any());
  const tools = [
    ...Object.entries(values).map(([name, value]) => finishing(name, value)),
    finishing("transformed", () => "2020-01-01", toDate),
  ];
  await using session = await embeddedSession(tools);
  for (const placed of tools) {
    const end = await session.call(placed.tool.name, {});
    assert.equal(errorCode(end.outcome), "invalid_output", placed.tool.name);
    const kinds = await callKinds(session, end.call);
    assert.deepEqual(kinds, ["tool_call_started", "tool_result", "tool_call_finished"]);
  }
});

Deno.test("emitResult of invalid output is refused and commits nothing", async () => {
  let refusal: unknown;
  const strictOut = tool({
    name: "strict_out",
    description: "A test Tool.",
    input: z.object({}),
    output: z.number(),
    run: async (_input, ctx) => {
      refusal = await ctx.emitResult("not a number" as never).catch((error) => error);
      return ctx.finish(1);
    },
  });
  await using session = await embeddedSession([strictOut()]);
  const end = await session.call("strict_out", {});
  assert.equal((refusal as { code?: string }).code, "invalid_output");
  assert.deepEqual(end.outcome, ok(1));
  const results = (await callRecords(session, end.call)).filter((record) => record.kind === "tool_result");
  assert.equal(results.length, 1);
});

Deno.test("a non-success outcome from emitResult terminates the execution", async () => {
  const afterwards = Promise.withResolvers<unknown>();
  const failing = tool({
    name: "failing",
    description: "A test Tool.",
    input: z.object({}),
    run: async (_input, ctx) => {
      await ctx.emitResult(fail("broken", "it broke"));
      afterwards.resolve(await ctx.emit("after", {}).catch((error) => error));
    },
  });
  await using session = await embeddedSession([failing()]);
  const end = await session.call("failing", {});
  assert.deepEqual(end.outcome, fail("broken", "it broke"));
  assert.ok(hasCode("call_finished")(await withDeadline(afterwards.promise, "the Tool's emit after the end")));
});

Deno.test("a returned value is validated against the output schema like a finished one", async () => {
  const output = z.object({ n: z.string().transform(Number).pipe(z.number()) });
  await using session = await embeddedSession([
    returning("good", () => ({ n: "5" }), output),
    returning("bad", () => ({ n: 5 }), output),
    returning("non_json", () => "2020-01-01", z.string().transform((text) => new Date(text)).pipe(z.any())),
  ]);
  const good = await session.start("good", {});
  await untilReturned(session, good.sequence);
  const [result] = (await callRecords(session, good.sequence)).filter((record) => record.kind === "tool_result");
  assert.deepEqual(result.kind === "tool_result" && result.outcome, ok({ n: 5 }), "the transformed value");
  await good.cancel();
  for (const name of ["bad", "non_json"]) {
    const end = await session.call(name, {});
    assert.equal(errorCode(end.outcome), "invalid_output", name);
    assert.equal(end.cause, "error", "an invalid returned value ends the call");
  }
});

Deno.test("an exception thrown after an await also becomes tool_error", async () => {
  const thrower = tool({
    name: "late_thrower",
    description: "A test Tool.",
    input: z.object({}),
    run: async (_input, ctx) => {
      await ctx.emit("working", null);
      throw new TypeError("failed midway");
    },
  });
  await using session = await embeddedSession([thrower()]);
  const end = await session.call("late_thrower", {});
  assert.equal(end.cause, "error");
  assert.deepEqual(end.outcome, fail("tool_error", "failed midway", { details: { name: "TypeError" } }));
  assert.deepEqual(await callKinds(session, end.call), [
    "tool_call_started",
    "tool_event",
    "tool_result",
    "tool_call_finished",
  ]);
});

Deno.test("returning a timeout, cancelled or unknown outcome also terminates the execution", async () => {
  const statuses = ["timeout", "cancelled", "unknown"] as const;
  const tools = statuses.map((status) => returning(status, () => ({ status, message: `the Tool says ${status}` })));
  await using session = await embeddedSession(tools);
  for (const status of statuses) {
    const end = await session.call(status, {});
    assert.deepEqual([end.cause, end.outcome], ["finish", { status, message: `the Tool says ${status}` }]);
    assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_result", "tool_call_finished"]);
  }
});

Deno.test("content may represent a structured error; it keeps the error status and the structured outcome", async () => {
  const errs = tool({
    name: "errs",
    description: "A test Tool.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish(fail("not_found", "no such record"), { content: "Nothing was found." }),
  });
  await using session = await embeddedSession([errs()]);
  const end = await session.call("errs", {});
  assert.equal(end.cause, "finish");
  assert.deepEqual(end.outcome, fail("not_found", "no such record"), "content never changes the failure status");
  const [result] = (await callRecords(session, end.call)).filter((record) => record.kind === "tool_result");
  assert.deepEqual(result, {
    ...result,
    outcome: fail("not_found", "no such record"),
    content: "Nothing was found.",
  });
});

Deno.test("content never bypasses output validation: invalid output with content is invalid_output, content dropped", async () => {
  let refusal: unknown;
  const claims = tool({
    name: "claims",
    description: "A test Tool.",
    input: z.object({ via: z.enum(["finish", "emitResult"]) }),
    output: z.object({ n: z.number() }),
    run: async ({ via }, ctx) => {
      if (via === "finish") return ctx.finish({ n: "x" } as never, { content: "All good." });
      refusal = await ctx.emitResult({ n: "x" } as never, { content: "All good." }).catch((error) => error);
      return ctx.finish();
    },
  });
  await using session = await embeddedSession([claims()]);
  const finished = await session.call("claims", { via: "finish" });
  assert.equal(errorCode(finished.outcome), "invalid_output");
  const emitted = await session.call("claims", { via: "emitResult" });
  assert.equal((refusal as { code?: string }).code, "invalid_output");
  assert.deepEqual(emitted.outcome, ok(null));
  for (const end of [finished, emitted]) {
    const records = await callRecords(session, end.call);
    assert.equal(
      JSON.stringify(records).includes("All good."),
      false,
      "the invalid result's content is not committed",
    );
  }
});

Deno.test("input and output schemas run once per call in parseAsync's mode, also when they fail", async () => {
  const runs = { input: 0, output: 0, asyncInput: 0 };
  const counted = (key: keyof typeof runs) => (value: number) => (runs[key]++, value);
  const sync = tool({
    name: "sync",
    description: "A test Tool.",
    input: z.object({ n: z.number().transform(counted("input")).pipe(z.number().min(0)) }),
    output: z.number().transform(counted("output")).pipe(z.number().max(10)),
    run: ({ n }, ctx) => ctx.finish(n),
  });
  const mixed = tool({
    name: "mixed",
    description: "A test Tool.",
    input: z.object({ n: z.number().transform(counted("asyncInput")) }).refine(({ n }) => Promise.resolve(n > 0)),
    run: ({ n }, ctx) => ctx.finish(n),
  });
  await using session = await embeddedSession([sync(), mixed()]);
  assert.deepEqual((await session.call("sync", { n: 3 })).outcome, ok(3));
  assert.deepEqual(runs, { input: 1, output: 1, asyncInput: 0 });
  const refusedInput = await session.call("sync", { n: -1 });
  assert.equal(errorCode(refusedInput.outcome), "invalid_input");
  assert.ok(refusedInput.outcome.status === "error");
  assert.deepEqual(refusedInput.outcome.error.details, [{
    path: ["n"],
    code: "too_small",
    message: "Too small: expected number to be >=0",
  }]);
  assert.equal(errorCode((await session.call("sync", { n: 11 })).outcome), "invalid_output");
  assert.deepEqual(runs, { input: 3, output: 2, asyncInput: 0 }, "each schema ran once per call");
  assert.deepEqual((await session.call("mixed", { n: 2 })).outcome, ok(2));
  assert.equal(errorCode((await session.call("mixed", { n: -2 })).outcome), "invalid_input");
  assert.deepEqual(runs.asyncInput, 2, "a schema with an async check runs once too");
});
