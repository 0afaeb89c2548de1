import assert from "node:assert/strict";
import { z } from "zod";
import { fail, type JsonValue, ok, tool, type ToolContext } from "../../mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { callRecords, hasCode, specTest, untilRecord } from "./_brains.ts";
import type { JournalRecord } from "../../src/journal/mod.ts";
import { hanging } from "../_support/model_askers.ts";
import { type Kind, KINDS, toolKinds } from "./_kinds.ts";
import { probeTool, reader } from "../_support/components.ts";

const provider = () => new ScriptedProvider(["one", "two", "three", "four"]);

/** Asks the model `times` times with its own messages and finishes with each answer or error code. */
const asker = tool({
  name: "asker",
  description: "Asks the model on its own.",
  input: z.object({ times: z.number() }),
  run: async ({ times }, ctx) => {
    const answers: JsonValue[] = [];
    for (let i = 0; i < times; i++) {
      answers.push(
        await ctx.model({ messages: [{ role: "user", content: `q${i}` }] }).then(
          (result) => result.content,
          (error) => error.code,
        ),
      );
    }
    return ctx.finish(answers);
  },
});

specTest(
  "a Tool's model calls use exactly the activation's model-call budget: the last one allowed runs, the next is refused",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [asker()], model: "default" });
    const end = await session.call("asker", { times: 4 });
    assert.deepEqual(end.outcome, ok(["one", "two", "three", "budget_exceeded"]));
    const records = await session.read();
    assert.equal(records.filter((record) => record.kind === "model_call_started").length, 3);
    assert.equal(records.filter((record) => record.kind === "model_call_finished").length, 3);
    const started = records.find((record) => record.kind === "model_call_started")!;
    assert.deepEqual(started.kind === "model_call_started" && started.origin, {
      kind: "tool",
      tool: "asker",
      call: end.call,
    });
  },
  () => ({ maxModelCalls: 3, models: { default: { provider: provider(), model: "fixed" } } }),
);

specTest("content never changes a failure's status or replaces the structured outcome", async (brain) => {
  const presenter = tool({
    name: "presenter",
    description: "Fails with content.",
    input: z.object({}),
    output: z.object({ n: z.number() }),
    run: (_input, ctx) => ctx.finish(fail("not_found", "no record", { details: { id: 1 } }), { content: "All good!" }),
  });
  const session = await brain.sessions.create({ tools: [presenter()] });
  const end = await session.call("presenter", {});
  assert.deepEqual([end.cause, end.outcome], ["finish", fail("not_found", "no record", { details: { id: 1 } })]);
  const result = (await callRecords(session, end.call)).find((record) => record.kind === "tool_result");
  assert.deepEqual(result?.kind === "tool_result" && [result.outcome, result.content], [end.outcome, "All good!"]);
});

specTest("content never bypasses output validation: invalid output with content is invalid_output", async (brain) => {
  const presenter = tool({
    name: "presenter",
    description: "Presents a bad value.",
    input: z.object({}),
    output: z.object({ n: z.number() }),
    run: async (_input, ctx) => {
      const refused = await ctx.emitResult({ n: "x" } as never, { content: "fine" }).then(
        () => "committed",
        (e) => e.code,
      );
      return ctx.finish({ n: refused } as never, { content: "fine" });
    },
  });
  const session = await brain.sessions.create({ tools: [presenter()] });
  const end = await session.call("presenter", {});
  assert.equal(end.outcome.status === "error" && end.outcome.error.code, "invalid_output");
  const results = (await callRecords(session, end.call)).filter((record) => record.kind === "tool_result");
  assert.equal(results.length, 1);
  assert.equal(results[0].kind === "tool_result" && results[0].content, undefined, "the content is dropped");
});

let seen: ScriptedProvider | undefined;
specTest(
  "ctx.model sends only the Tool's explicit messages: empty prompt, no tools, no response format, the session's model and credentials",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [asker()], model: "default" });
    assert.deepEqual((await session.call("asker", { times: 1 })).outcome, ok(["one"]));
    const [call] = seen!.calls;
    assert.deepEqual([call.model, call.credentials], ["fixed", { apiKey: "key" }]);
    assert.deepEqual(call.request, { messages: [{ role: "user", content: "q0" }], system: "", tools: [] });
  },
  () => ({ models: { default: { provider: seen = provider(), model: "fixed", credentials: { apiKey: "key" } } } }),
);

specTest("a malformed ctx.model request is refused invalid_argument before any provider call", async (brain) => {
  const codes = Promise.withResolvers<JsonValue[]>();
  const bad = tool({
    name: "bad",
    description: "Asks badly.",
    input: z.object({}),
    run: async (_input, ctx) => {
      const requests = [
        {},
        { messages: [] },
        { messages: [{ role: "user", content: "hi" }], model: "another" },
        { messages: [{ role: "user", content: 5 }] },
      ];
      const answers: JsonValue[] = [];
      for (const request of requests) {
        answers.push(await ctx.model(request as never).then(() => "answered", (error) => error.code));
      }
      codes.resolve(answers);
      return ctx.finish(null);
    },
  });
  const session = await brain.sessions.create({ tools: [bad()], model: "default" });
  await session.call("bad", {});
  assert.deepEqual(await codes.promise, Array(4).fill("invalid_argument"));
  assert.equal(seen!.calls.length, 0);
  assert.equal((await session.read()).some((record) => record.kind === "model_call_started"), false);
}, () => ({ models: { default: { provider: seen = provider(), model: "fixed" } } }));

specTest(
  "a Component's model import (brain:tool/host.model) uses the session's model under the Tool's identity and the activation's budget",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [probeTool("model")({ env: reader })], model: "default" });
    const activation = session.activation();
    const request = { messages: [{ role: "user", content: "q" }] };
    const first = await session.call("model", request, { activation });
    const second = await session.call("model", request, { activation });
    // The probe returns without finishing once the model answered, and returns the refusal's code when refused.
    assert.match(first.outcome.status === "error" ? first.outcome.error.message : "", /without calling finish/);
    assert.deepEqual(
      second.outcome.status === "error" && second.outcome.error.message,
      "budget_exceeded",
      "the activation's one model call is spent",
    );
    const records = await session.read();
    const started = records.filter((record) => record.kind === "model_call_started");
    assert.deepEqual(started.map((record) => record.kind === "model_call_started" && record.origin), [
      { kind: "tool", tool: "model", call: first.call },
    ]);
    const finished = records.filter((record) => record.kind === "model_call_finished");
    assert.deepEqual(finished.map((record) => record.kind === "model_call_finished" && record.outcome.status), ["ok"]);
    assert.ok(finished[0].sequence < first.sequence, "the model call is journaled before the Tool's call ends");
    assert.deepEqual(seen!.calls.map((call) => call.request), [{ ...request, system: "", tools: [] }]);
  },
  () => ({
    maxModelCalls: 1,
    models: { default: { provider: seen = provider(), model: "fixed" } },
    allow: { workspaceRoot: ".tmp/ws-spec", filesystem: ["read"] },
  }),
);

specTest(
  "a malformed model request is invalid_argument with or without a session model, even after the call ended; a well-formed one without a model is model_unavailable, and send alike",
  async (brain) => {
    const answers = Promise.withResolvers<JsonValue[]>();
    const held = Promise.withResolvers<ToolContext>();
    const ask = tool({
      name: "ask",
      description: "Asks the model with and without messages.",
      input: z.object({ hold: z.boolean() }),
      run: async ({ hold }, ctx) => {
        if (hold) return void held.resolve(ctx as unknown as ToolContext);
        answers.resolve([
          await ctx.model({ messages: [] }).then(() => "answered", (error) => error.code),
          await ctx.model({ messages: [{ role: "user", content: "hi" }] }).then(
            () => "answered",
            (error) => error.code,
          ),
        ]);
        return ctx.finish(null);
      },
    });
    const session = await brain.sessions.create({ tools: [ask()] });
    await session.call("ask", { hold: false });
    assert.deepEqual(await answers.promise, ["invalid_argument", "model_unavailable"]);
    const call = await session.start("ask", { hold: true });
    const ctx = await held.promise;
    await call.cancel();
    await assert.rejects(ctx.model({ messages: [] }), hasCode("invalid_argument"));
    await assert.rejects(ctx.model({ messages: [{ role: "user", content: "hi" }] }), hasCode("call_finished"));
    await assert.rejects(session.send(5 as never), hasCode("invalid_argument"));
    await assert.rejects(session.send("hi"), hasCode("model_unavailable"));
    assert.equal((await session.read()).some((record) => record.kind === "model_call_started"), false);
  },
);

let hangingModel: ScriptedProvider;
specTest(
  "completion, the original deadline, cancellation and session end stop a Tool's pending model request: unknown, never replayed",
  async (brain) => {
    const caught: Promise<string>[] = [];
    const ask = tool({
      name: "ask",
      description: "Asks the model, and finishes once asked when told to.",
      input: z.object({ finish: z.boolean() }),
      run: async ({ finish }, ctx) => {
        caught.push(ctx.model({ messages: [{ role: "user", content: "slow" }] }).then(() => "answered", (e) => e.code));
        if (!finish) return;
        await untilRecord(session, (record) => record.kind === "model_call_started" && record.sequence > ctx.sequence);
        return ctx.finish("done");
      },
    });
    const session = await brain.sessions.create({ tools: [ask()], model: "default" });
    const stops = {
      finish: () => session.start("ask", { finish: true }),
      deadline: () => session.start("ask", { finish: false }, { timeoutMs: 300 }),
      cancel: () => session.start("ask", { finish: false }),
      end: () => session.start("ask", { finish: false }),
    };
    const unknown = { status: "unknown", message: "the model call was interrupted" };
    const seen: unknown[] = [];
    for (const [how, start] of Object.entries(stops)) {
      const call = await start();
      const asking = (r: JournalRecord) => r.kind === "model_call_started" && r.sequence > call.sequence;
      // The deadline may pass before the request is journaled (then it is refused, nothing sent): no wait for it.
      if (how !== "deadline") await untilRecord(session, asking);
      if (how === "cancel") await call.cancel();
      if (how === "end") await session.end();
      const end = await call.ended;
      const asked = (await session.read()).find(asking);
      const answered = asked &&
        await untilRecord(session, (r) => r.kind === "model_call_finished" && r.call === asked.sequence);
      seen.push([
        end.cause,
        await caught.at(-1)!,
        answered?.kind === "model_call_finished" ? answered.outcome : unknown,
      ]);
    }
    assert.deepEqual(seen, [
      ["finish", "call_finished", unknown],
      ["timeout", "timeout", unknown],
      ["cancelled", "cancelled", unknown],
      ["cancelled", "cancelled", unknown],
    ]);
    // A request stopped between its record and the provider never reaches it; none reaches it twice.
    assert.ok(hangingModel.calls.length <= 4, `${hangingModel.calls.length} provider calls for 4 requests`);
    assert.ok(hangingModel.calls.every((call) => call.signal.aborted), "the provider was told to stop each");
  },
  () => ({
    models: { default: { provider: hangingModel = new ScriptedProvider(Array(5).fill(hanging())), model: "fixed" } },
  }),
);

let kinds: ReturnType<typeof toolKinds>;
let loopModel: ScriptedProvider;
specTest(
  "whatever the Tool kind, the Agentloop advertises the same Tool schemas and presents the same results and failures to the model",
  async (brain) => {
    await using _servers = kinds;
    const seen = new Map<Kind, unknown>();
    for (const kind of KINDS) {
      const session = await brain.sessions.create({ tools: kinds.place(kind), model: "default" });
      const asked = loopModel.calls.length;
      assert.equal((await session.send("echo twice")).content, "done", kind);
      const [first, second] = loopModel.calls.slice(asked);
      // Descriptions are each kind's own; the names and schemas are the declaration's.
      const specs = first.request.tools?.map(({ name, inputSchema }) => ({ name, inputSchema }));
      seen.set(kind, [specs, second.request.messages.slice(1)]);
    }
    const [tools, messages] = seen.get("in-process") as [unknown, unknown[]];
    assert.deepEqual((tools as { name: string }[]).map((spec) => spec.name), ["echo", "spin"]);
    assert.deepEqual(messages.slice(1), [
      { role: "tool", toolCallId: "a", content: "3" },
      {
        role: "tool",
        toolCallId: "b",
        content:
          'Error (invalid_output): output does not match the schema: ✖ Invalid input: expected int, received number [{"path":[],"code":"invalid_type","message":"Invalid input: expected int, received number"}]',
      },
    ]);
    for (const kind of KINDS) assert.deepEqual(seen.get(kind), seen.get("in-process"), kind);
  },
  () => {
    kinds = toolKinds();
    const turn = [
      { toolCalls: [{ id: "a", name: "echo", input: { value: 3 } }, { id: "b", name: "echo", input: { value: 1.5 } }] },
      "done",
    ];
    loopModel = new ScriptedProvider(KINDS.flatMap(() => turn));
    return { allow: kinds.allow, models: { default: { provider: loopModel, model: "fixed" } } };
  },
);
