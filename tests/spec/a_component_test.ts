import assert from "node:assert/strict";
import { z } from "zod";
import { BrainError, component, ok, type TelemetryEntry, tool } from "../../mod.ts";
import { withDeadline } from "../_support/deadline.ts";
import { callKinds, callRecords, specTest, untilRecord } from "./_brains.ts";
import { PROBE, probeTool, reader } from "../_support/components.ts";

/** The read-workspace allow-list the Component placements need, on an embedded Brain and on the server. */
const allow = { workspaceRoot: ".tmp/ws-spec", filesystem: ["read" as const] };

specTest(
  "each Component invocation receives the parsed input, the parsed options and the deadline (0 when unlimited)",
  async (brain) => {
    const echo = tool({
      name: "echo",
      description: "Finishes with its input as the Outcome.",
      input: z.object({ status: z.literal("ok"), value: z.string().default("filled").transform((v) => `${v}!`) }),
      implementation: component(PROBE),
    });
    const options = tool({
      name: "options",
      description: "Finishes with its options as the Outcome.",
      input: z.unknown(),
      options: z.object({ status: z.literal("ok"), value: z.number().default(4) }),
      implementation: component(PROBE),
    });
    const session = await brain.sessions.create({
      tools: [echo({ env: reader }), options({ env: reader, status: "ok" }), probeTool("deadline")({ env: reader })],
    });
    assert.deepEqual((await session.call("echo", { status: "ok", extra: 1 })).outcome, {
      status: "ok",
      value: "filled!",
    });
    assert.deepEqual((await session.call("options", null)).outcome, { status: "ok", value: 4 });
    const deadline = Date.now() + 30_000;
    assert.deepEqual((await session.call("deadline", null, { deadline })).outcome, { status: "ok", value: deadline });
    assert.deepEqual((await session.call("deadline", null)).outcome, { status: "ok", value: 0 });
  },
  { allow },
);

specTest(
  "a Component's options reach it as JSON: one given as undefined is one not given; a BigInt, NaN or Date is invalid_options at creation, alike on every transport",
  async (brain) => {
    const options = (given: z.ZodType) =>
      tool({
        name: "options",
        description: "Finishes with its options as the Outcome.",
        input: z.unknown(),
        options: z.object({ status: z.literal("ok"), value: given, note: z.string().optional() }),
        implementation: component(PROBE),
      });
    const session = await brain.sessions.create({
      tools: [options(z.number())({ env: reader, status: "ok", value: 1, note: undefined })],
    });
    assert.deepEqual((await session.call("options", null)).outcome, ok(1));
    const refusals: string[] = [];
    for (const [given, value] of [[z.bigint(), 5n], [z.any(), NaN], [z.date(), new Date(0)]] as const) {
      const placed = options(given as z.ZodType)({ env: reader, status: "ok", value } as never);
      const refused = await brain.sessions.create({ tools: [placed] }).then(() => undefined, (error) => error);
      assert.ok(refused instanceof BrainError && refused.code === "invalid_options", String(refused));
      refusals.push(refused.message);
    }
    const refused = `the Component ${PROBE.href} receives its placement's options as JSON, and $.value is`;
    assert.deepEqual(refusals, [`${refused} bigint`, `${refused} NaN`, `${refused} an instance of Date`]);
    assert.deepEqual((await brain.sessions.list()).length, 1, "no refused session was kept");
  },
  { allow },
);

specTest(
  "a Component's outcomes: an error keeps its fields, a malformed one is invalid_output, err, trap and no finish are tool_error",
  async (brain) => {
    const names = ["echo", "bad_json", "fail", "trap", "no_finish"];
    const session = await brain.sessions.create({ tools: names.map((name) => probeTool(name)({ env: reader })) });
    const error = { status: "error", error: { code: "nope", message: "no", retryable: true, details: { a: [1] } } };
    const kept = await session.call("echo", error);
    assert.deepEqual([kept.cause, kept.outcome], ["finish", error]);
    for (
      const [name, code] of [["bad_json", "invalid_output"], ["fail", "tool_error"], ["trap", "tool_error"], [
        "no_finish",
        "tool_error",
      ]]
    ) {
      const end = await session.call(name, null);
      assert.deepEqual([end.cause, end.outcome.status === "error" && end.outcome.error.code], ["error", code], name);
      assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_result", "tool_call_finished"]);
    }
  },
  { allow },
);

specTest(
  "a spinning Component ends timeout at its deadline and cancelled when cancelled; an expired call never runs it",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [probeTool("spin")({ env: reader })] });
    const timed = await session.call("spin", null, { timeoutMs: 300 });
    assert.deepEqual([timed.cause, timed.outcome.status], ["timeout", "timeout"]);
    const started = await session.start("spin", null);
    await untilRecord(session, (record) => record.kind === "tool_event" && record.call === started.sequence);
    const cancelled = await started.cancel("stop");
    assert.deepEqual([cancelled.cause, cancelled.outcome], ["cancelled", { status: "cancelled", message: "stop" }]);
    const expired = await session.call("spin", null, { deadline: Date.now() - 1 });
    assert.equal(expired.cause, "timeout");
    assert.deepEqual(await callKinds(session, expired.call), ["tool_call_started", "tool_call_finished"], "never ran");
  },
  { allow },
);

specTest(
  "a Component's emit commits before its result, returned ends only the synchronous phase, nothing after finish is kept",
  async (brain) => {
    const names = ["emit_then_echo", "returned_then_finish", "result_then_finish", "after_finish", "telemetry"];
    const session = await brain.sessions.create({ tools: names.map((name) => probeTool(name)({ env: reader })) });
    const emitted = await session.call("emit_then_echo", { status: "ok", value: "x" });
    const emittedRecords = await callRecords(session, emitted.call);
    assert.deepEqual(emittedRecords.map((record) => record.kind), [
      "tool_call_started",
      "tool_event",
      "tool_result",
      "tool_call_finished",
    ]);
    assert.deepEqual(emitted.outcome, ok("x"));
    const returned = await session.call("returned_then_finish", { status: "ok", value: 3 });
    assert.deepEqual(await callKinds(session, returned.call), [
      "tool_call_started",
      "tool_result",
      "tool_returned",
      "tool_event",
      "tool_call_finished",
    ]);
    assert.deepEqual(returned.outcome, ok(3));
    const presented = await session.call("result_then_finish", { status: "ok", value: 5 });
    const [, result] = await callRecords(session, presented.call);
    assert.deepEqual(result.kind === "tool_result" && [result.outcome, result.content], [ok(5), "probe"]);
    assert.deepEqual(presented.outcome, ok(5));
    const after = await session.call("after_finish", null);
    assert.deepEqual(await callKinds(session, after.call), ["tool_call_started", "tool_call_finished"]);
    const telemetry = await session.call("telemetry", "diagnostic-text");
    const kept = await callRecords(session, telemetry.call);
    assert.deepEqual(kept.map((record) => record.kind), ["tool_call_started", "tool_call_finished"]);
    assert.ok(!JSON.stringify(kept.slice(1)).includes("diagnostic-text"), "telemetry never enters saved history");
  },
  { allow },
);

specTest(
  "a Component's telemetry reaches its component(url, { telemetry }) listener on every transport (a remote one's from the server's sandbox), never the journal",
  async (brain) => {
    const heard = Promise.withResolvers<TelemetryEntry>();
    const listened = component(PROBE, { telemetry: (entry) => heard.resolve(entry) });
    const session = await brain.sessions.create({ tools: [probeTool("telemetry", listened)({ env: reader })] });
    const end = await session.call("telemetry", "diagnostic-text");
    const entry = await withDeadline(heard.promise, "the telemetry entry");
    assert.deepEqual(entry, { tool: "telemetry", call: end.call, level: "telemetry", message: '"diagnostic-text"' });
    const kept = await callRecords(session, end.call);
    assert.deepEqual(kept.map((record) => record.kind), ["tool_call_started", "tool_call_finished"]);
    assert.ok(!JSON.stringify(kept.slice(1)).includes("diagnostic-text"), "never in saved history");
  },
  { allow },
);
