import assert from "node:assert/strict";
import { z } from "zod";
import { BRAIN_MAX_INPUT_BYTES, type JsonValue, ok, tool } from "../../mod.ts";
import { callKinds, hasCode, specTest } from "./_brains.ts";

const echo = tool({
  name: "echo",
  description: "Echoes its text.",
  input: z.object({ text: z.string() }),
  run: ({ text }, ctx) => ctx.finish(text),
});

specTest(
  "the SDK validates input: input that is not the declared object ends the call invalid_input, never running",
  async (brain) => {
    let runs = 0;
    const counted = tool({
      name: "counted",
      description: "Counts runs.",
      input: z.object({ text: z.string() }),
      run: (_input, ctx) => (runs++, ctx.finish(null)),
    });
    const session = await brain.sessions.create({ tools: [counted()] });
    for (const input of ["text", 7, null, [], { text: 1 }, {}] as JsonValue[]) {
      const end = await session.call("counted", input);
      assert.deepEqual(
        [end.cause, end.outcome.status === "error" && end.outcome.error.code],
        ["error", "invalid_input"],
        JSON.stringify(input),
      );
      assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_result", "tool_call_finished"]);
    }
    assert.equal(runs, 0);
  },
);

specTest(
  "input of exactly maxInputBytes is accepted; one byte more is payload_too_large and journals nothing",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [echo()] });
    const overhead = JSON.stringify({ text: "" }).length;
    const exact = { text: "x".repeat(200 - overhead) };
    assert.equal(new TextEncoder().encode(JSON.stringify(exact)).length, 200);
    assert.deepEqual((await session.call("echo", exact)).outcome, ok(exact.text));
    const before = (await session.read()).length;
    await assert.rejects(
      session.call("echo", { text: "é".repeat(100 - overhead / 2 + 1) }),
      hasCode("payload_too_large"),
    );
    assert.equal((await session.read()).length, before);
  },
  { maxInputBytes: 200 },
);

Deno.test("BRAIN_MAX_INPUT_BYTES is the documented default of one MiB", () => {
  assert.equal(BRAIN_MAX_INPUT_BYTES, 1024 * 1024);
});

specTest(
  "bad call options are invalid_argument, non-JSON input invalid_input, and both commit nothing",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [echo()] });
    for (
      const options of [{ timeoutMs: Number.NaN }, { timeoutMs: Infinity }, { deadline: Number.NaN }, {
        deadline: "soon",
      }]
    ) {
      await assert.rejects(
        session.call("echo", { text: "x" }, options as never),
        hasCode("invalid_argument"),
        JSON.stringify(options),
      );
    }
    await assert.rejects(session.call("echo", { text: 1n } as never), hasCode("invalid_input"));
    assert.deepEqual(await session.read(), []);
    await session.call("echo", { text: "x" });
    assert.deepEqual((await session.read({ from: 2, limit: 1 })).map((record) => record.sequence), [2]);
    assert.deepEqual(await session.read({ from: 99 }), []);
  },
);

specTest("a deadline equal to now has passed: the call ends timeout without running", async (brain) => {
  let runs = 0;
  const counted = tool({
    name: "counted",
    description: "Counts runs.",
    input: z.object({}),
    run: (_input, ctx) => (runs++, ctx.finish(null)),
  });
  const session = await brain.sessions.create({ tools: [counted()] });
  const end = await session.call("counted", {}, { deadline: Date.now() });
  assert.deepEqual([end.cause, end.outcome.status, runs], ["timeout", "timeout", 0]);
});

specTest(
  "read and records refuse a range that is not one with invalid_argument, before anything is read",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [echo()] });
    await session.call("echo", { text: "x" });
    const ranges = [
      { from: -1 },
      { from: 0 },
      { from: Number.NaN },
      { from: 1.5 },
      { from: Infinity },
      { from: "1" },
      { limit: -1 },
      { limit: Number.NaN },
      { limit: 0.5 },
      { limit: "2" },
      { from: 1, limit: -5 },
      { form: 2 },
      null,
      "all",
    ];
    for (const range of ranges) {
      await assert.rejects(session.read(range as never), hasCode("invalid_argument"), JSON.stringify(range));
    }
    for (const from of [-1, 0, Number.NaN, 2.5, "1"]) {
      assert.throws(() => session.records({ from: from as never }), hasCode("invalid_argument"), String(from));
    }
    assert.deepEqual(await session.read({ from: 2, limit: 0 }), []);
    assert.deepEqual((await session.read({ from: 1, limit: 1 })).map((record) => record.sequence), [1]);
  },
);
