import assert from "node:assert/strict";
import { z } from "zod";
import { component, hostEnv, tool } from "../../mod.ts";
import type { SessionModel } from "../../src/model/types.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { PROBE, probeTool, reader, readerBrain } from "../_support/components.ts";
import { soon } from "../_support/deadline.ts";
import { telemetrySink } from "../_support/telemetry_sink.ts";

async function callProbe(
  name: string,
  input: unknown,
  options: { output?: z.ZodType; maxEmittedBytes?: number; model?: SessionModel } = {},
) {
  await using brain = readerBrain(options.maxEmittedBytes ? { maxEmittedBytes: options.maxEmittedBytes } : {});
  const { entries, telemetry } = telemetrySink();
  const placed = probeTool(name, component(PROBE, { telemetry }), options.output)({ env: reader });
  const session = await brain.sessions.create({ tools: [placed], model: options.model });
  const end = await session.call(name, input as never, { deadline: soon() });
  return { end, records: await session.read(), telemetry: entries };
}

Deno.test("finish with an Outcome JSON publishes it and ends the call", async () => {
  const { end, records } = await callProbe("echo", { status: "ok", value: { n: 1 } });
  assert.deepEqual(end.outcome, { status: "ok", value: { n: 1 } });
  assert.equal(end.cause, "finish");
  assert.deepEqual(records.map((r) => r.kind), ["tool_call_started", "tool_result", "tool_call_finished"]);
});

Deno.test("an error Outcome keeps code, message, retryable and details", async () => {
  const outcome = { status: "error", error: { code: "nope", message: "no", retryable: true, details: { a: 1 } } };
  const { end } = await callProbe("echo", outcome);
  assert.deepEqual(end.outcome, outcome);
});

Deno.test("malformed Outcome JSON from the guest is invalid_output", async () => {
  const { end, records } = await callProbe("bad_json", null);
  assert.equal(end.cause, "error");
  assert.equal(end.outcome.status === "error" && end.outcome.error.code, "invalid_output");
  const results = records.filter((r) => r.kind === "tool_result");
  assert.deepEqual(results.map((r) => r.kind === "tool_result" && r.outcome), [end.outcome]);
});

Deno.test("JSON that is not an Outcome envelope, or a malformed envelope, is invalid_output", async () => {
  for (const input of [{ value: 1 }, { status: "ok" }, { status: "error", error: { code: "" } }]) {
    const { end } = await callProbe("echo", input);
    assert.equal(end.outcome.status === "error" && end.outcome.error.code, "invalid_output", JSON.stringify(input));
  }
});

Deno.test("an ok value is validated against the output schema", async () => {
  const output = z.object({ n: z.number() });
  assert.deepEqual((await callProbe("echo", { status: "ok", value: { n: 2 } }, { output })).end.outcome, {
    status: "ok",
    value: { n: 2 },
  });
  const { end } = await callProbe("echo", { status: "ok", value: { n: "2" } }, { output });
  assert.equal(end.outcome.status === "error" && end.outcome.error.code, "invalid_output");
});

Deno.test("emit-result refuses a malformed outcome and the guest sees invalid_output", async () => {
  const { end, records } = await callProbe("result_then_finish", { status: "ok" });
  assert.equal(end.outcome.status === "error" && end.outcome.error.code, "tool_error");
  assert.equal(end.outcome.status === "error" && end.outcome.error.message, "invalid_output");
  const results = records.filter((r) => r.kind === "tool_result");
  assert.deepEqual(results.map((r) => r.kind === "tool_result" && r.outcome), [end.outcome]);
});

Deno.test("emit-result with content, then finish without a result, ends with the last result", async () => {
  const { end, records } = await callProbe("result_then_finish", { status: "ok", value: 5 });
  assert.deepEqual(end.outcome, { status: "ok", value: 5 });
  const result = records.find((r) => r.kind === "tool_result");
  assert.equal(result?.kind === "tool_result" && result.content, "probe");
});

Deno.test("emit waits for the committed Event, which precedes the result", async () => {
  const { end, records } = await callProbe("emit_then_echo", { status: "ok", value: "x" });
  assert.deepEqual(end.outcome, { status: "ok", value: "x" });
  assert.deepEqual(records.map((r) => r.kind), [
    "tool_call_started",
    "tool_event",
    "tool_result",
    "tool_call_finished",
  ]);
  const event = records[1];
  assert.equal(event.kind === "tool_event" && event.event, "probe");
  assert.deepEqual(event.kind === "tool_event" && event.data, { status: "ok", value: "x" });
});

Deno.test("returned ends the synchronous phase while run keeps emitting until finish", async () => {
  const { end, records } = await callProbe("returned_then_finish", { status: "ok", value: 3 });
  assert.deepEqual(records.map((r) => r.kind), [
    "tool_call_started",
    "tool_result",
    "tool_returned",
    "tool_event",
    "tool_call_finished",
  ]);
  assert.deepEqual(end.outcome, { status: "ok", value: 3 });
});

Deno.test("finish stops the Worker: nothing after it runs or is committed", async () => {
  const { end, records, telemetry } = await callProbe("after_finish", null);
  assert.equal(end.cause, "finish");
  assert.deepEqual(records.map((r) => r.kind), ["tool_call_started", "tool_call_finished"]);
  assert.deepEqual(telemetry, []);
});

Deno.test("telemetry reaches the listener and never enters the journal", async () => {
  const { records, telemetry } = await callProbe("telemetry", "diagnostic-text");
  assert.deepEqual(telemetry.map((t) => [t.tool, t.level, t.message]), [[
    "telemetry",
    "telemetry",
    '"diagnostic-text"',
  ]]);
  const after = records.filter((r) => r.kind !== "tool_call_started");
  assert.deepEqual(after.map((r) => r.kind), ["tool_call_finished"]);
  assert.ok(!JSON.stringify(after).includes("diagnostic-text"));
});

Deno.test("the model import calls the session's model with the Component's identity", async () => {
  const provider = new ScriptedProvider(["from the model"]);
  const request = { messages: [{ role: "user", content: "hi" }] };
  const { records } = await callProbe("model", request, { model: { provider, model: "m" } });
  assert.equal(provider.calls.length, 1);
  assert.deepEqual(provider.calls[0].request, { ...request, system: "", tools: [] });
  const started = records.find((r) => r.kind === "model_call_started");
  assert.deepEqual(started?.kind === "model_call_started" && started.origin, { kind: "tool", tool: "model", call: 1 });
  const finished = records.find((r) => r.kind === "model_call_finished");
  assert.equal(finished?.kind === "model_call_finished" && finished.outcome.status, "ok");
});

Deno.test("the model import refuses without a session model, and refuses a bad request before any call", async () => {
  const bare = await callProbe("model", { messages: [{ role: "user", content: "hi" }] });
  assert.equal(bare.end.outcome.status === "error" && bare.end.outcome.error.message, "model_unavailable");
  const provider = new ScriptedProvider([]);
  const bad = await callProbe("model", { messages: [] }, { model: { provider, model: "m" } });
  assert.equal(bad.end.outcome.status === "error" && bad.end.outcome.error.message, "invalid_argument");
  assert.equal(provider.calls.length, 0);
});

Deno.test("run returning err, trapping, or returning without finish is tool_error", async () => {
  for (
    const [name, message] of [["fail", /^boom$/], ["trap", /unreachable/i], [
      "no_finish",
      /without calling finish/,
    ]] as const
  ) {
    const { end } = await callProbe(name, null);
    assert.equal(end.cause, "error", name);
    assert.equal(end.outcome.status === "error" && end.outcome.error.code, "tool_error", name);
    assert.match(end.outcome.status === "error" ? end.outcome.error.message : "", message, name);
  }
});

Deno.test("a runaway Component is terminated at its deadline and the call ends timeout", async () => {
  await using brain = readerBrain();
  const session = await brain.sessions.create({ tools: [probeTool("spin")({ env: reader })] });
  const end = await session.call("spin", null, { deadline: Date.now() + 300 });
  assert.equal(end.cause, "timeout");
  assert.equal(end.outcome.status, "timeout");
});

Deno.test("cancelling a runaway Component ends it cancelled", async () => {
  await using brain = readerBrain();
  const session = await brain.sessions.create({ tools: [probeTool("spin")({ env: reader })] });
  const call = await session.start("spin", null, { deadline: soon() });
  const end = await call.cancel();
  assert.equal(end.cause, "cancelled");
});

Deno.test("emissions over BRAIN_MAX_EMITTED_BYTES are refused to the guest and never committed", async () => {
  const input = "x".repeat(40);
  const { end, records, telemetry } = await callProbe("emit_loop", input, { maxEmittedBytes: 200 });
  const events = records.filter((r) => r.kind === "tool_event");
  const bytes = events.reduce((sum, r) => sum + 5 + JSON.stringify(r.kind === "tool_event" && r.data).length, 0);
  assert.ok(events.length > 0 && bytes <= 200, `${events.length} events, ${bytes} bytes`);
  assert.equal(events.length, Math.floor(200 / (5 + JSON.stringify(input).length)));
  assert.deepEqual(telemetry.map((t) => t.message), ["budget_exceeded"]);
  assert.equal(end.cause, "finish");
});

Deno.test("input is validated with the Tool's schema before any Worker runs", async () => {
  await using brain = readerBrain();
  const strict = tool({
    name: "emit_then_echo",
    description: "probe with a strict input",
    input: z.object({ status: z.literal("ok"), value: z.number() }),
    implementation: component(PROBE),
  });
  const session = await brain.sessions.create({ tools: [strict({ env: reader })] });
  const end = await session.call("emit_then_echo", { status: "ok", value: "x" }, { deadline: soon() });
  assert.equal(end.outcome.status === "error" && end.outcome.error.code, "invalid_input");
  // The guest would have emitted first: no Event means it never ran.
  assert.ok(!(await session.read()).some((r) => r.kind === "tool_event"));
});

Deno.test("Component input and output are validated with parseAsync, defaults and transforms included", async () => {
  await using brain = readerBrain();
  const checked = tool({
    name: "echo",
    description: "probe echo with async schemas",
    input: z.object({ status: z.literal("ok"), value: z.number().default(5).transform((n) => n * 2) })
      .refine(async () => (await new Promise((resolve) => setTimeout(resolve, 1)), true)),
    output: z.number().transform((n) => String(n + 1)).pipe(z.string()).refine(() => Promise.resolve(true)),
    implementation: component(PROBE),
  });
  const session = await brain.sessions.create({ tools: [checked({ env: reader })] });
  const end = await session.call("echo", { status: "ok" }, { deadline: soon() });
  assert.deepEqual(
    end.outcome,
    { status: "ok", value: "11" },
    'the guest saw the parsed input 10; output became "11"',
  );
});

Deno.test("a Component placed in a host Environment is refused at session creation", async () => {
  await using brain = readerBrain();
  const placed = probeTool("echo")({ env: hostEnv({ name: "app" }) });
  await assert.rejects(brain.sessions.create({ tools: [placed] }), { code: "unsupported_runtime" });
});

Deno.test("the guest receives the deadline in ms, 0 for an unlimited call", async () => {
  await using brain = readerBrain();
  const session = await brain.sessions.create({ tools: [probeTool("deadline")({ env: reader })] });
  const deadline = Date.now() + 5_000;
  assert.deepEqual((await session.call("deadline", null, { deadline })).outcome, { status: "ok", value: deadline });
  assert.deepEqual((await session.call("deadline", null)).outcome, { status: "ok", value: 0 });
});

Deno.test("the guest receives the placement's parsed options as JSON", async () => {
  await using brain = readerBrain();
  const options = tool({
    name: "options",
    description: "probe options",
    input: z.unknown(),
    options: z.object({ status: z.literal("ok"), value: z.number().default(4) }),
    implementation: component(PROBE),
  });
  const session = await brain.sessions.create({ tools: [options({ env: reader, status: "ok" })] });
  assert.deepEqual((await session.call("options", null, { deadline: soon() })).outcome, { status: "ok", value: 4 });
});
