import assert from "node:assert/strict";
import { z } from "zod";
import { type BrainSession, fail, httpEnv, type JsonValue, ok, tool, type ToolContext } from "../../mod.ts";
import { MODEL_TOKEN_HEADER, MODEL_URL_HEADER } from "../../src/env/mod.ts";
import type { ModelProvider } from "../../src/model/types.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { callRecords, hasCode, specTest, untilRecord } from "./_brains.ts";
import type { JournalRecord } from "../../src/journal/mod.ts";
import { hanging } from "../_support/model_askers.ts";
import { type Kind, KINDS, toolKinds } from "./_kinds.ts";
import { probeTool, reader } from "../_support/components.ts";
import { serve } from "../_support/serve.ts";
import { withDeadline } from "../_support/deadline.ts";
import { gate } from "../_support/gate.ts";
import { ofKind, until } from "../_support/until.ts";

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

/** A provider that streams each reply in two fragments to a caller that takes fragments, and notes who took them. */
function streaming(): ModelProvider & { streamed: boolean[] } {
  const streamed: boolean[] = [];
  return {
    name: "streaming",
    streamed,
    complete({ onDelta }) {
      streamed.push(onDelta !== undefined);
      onDelta?.("An ");
      onDelta?.("answer.");
      return Promise.resolve({ content: "An answer.", toolCalls: [], stopReason: "stop", model: "fixed" });
    },
  };
}

let streamingModel: ReturnType<typeof streaming>;
specTest(
  "concurrent Tool model calls keep each call's identity in origin and journal no assistant deltas; the Agentloop's streamed turn does",
  async (brain) => {
    const arrived = { count: 0, both: Promise.withResolvers<void>() };
    const together = tool({
      name: "together",
      description: "Asks the model once the other call asks too.",
      input: z.object({}),
      run: async (_input, ctx) => {
        if (++arrived.count === 2) arrived.both.resolve();
        await arrived.both.promise;
        return ctx.finish((await ctx.model({ messages: [{ role: "user", content: "q" }] })).content);
      },
    });
    const session = await brain.sessions.create({ tools: [together()], model: "default" });
    const calls = await Promise.all([session.start("together", {}), session.start("together", {})]);
    const ends = await Promise.all(calls.map((call) => call.ended));
    assert.deepEqual(ends.map((end) => end.outcome), [ok("An answer."), ok("An answer.")]);
    assert.equal((await session.send("hi")).content, "An answer.");
    const records = await session.read();
    const started = records.filter((record) => record.kind === "model_call_started");
    const origins = started.map((record) => record.kind === "model_call_started" ? record.origin : undefined);
    assert.deepEqual(origins.at(-1), { kind: "agentloop" });
    const byCall = (origin: unknown) => (origin as { call: number }).call;
    assert.deepEqual(
      origins.slice(0, 2).sort((a, b) => byCall(a) - byCall(b)),
      calls.map((call) => ({ kind: "tool", tool: "together", call: call.sequence })).sort((a, b) => a.call - b.call),
    );
    const deltas = records.filter((record) => record.kind === "assistant_delta");
    assert.deepEqual(
      [...new Set(deltas.map((delta) => delta.kind === "assistant_delta" && delta.modelCall))],
      [started[2].sequence],
      "only the Agentloop's own turn streams into the conversation",
    );
    assert.equal(deltas.map((delta) => delta.kind === "assistant_delta" && delta.content).join(""), "An answer.");
    assert.deepEqual(streamingModel.streamed, [false, false, true]);
  },
  () => ({ models: { default: { provider: streamingModel = streaming(), model: "fixed" } } }),
);

let summarizer: { url: string; host: string; [Symbol.asyncDispose](): Promise<void> };
let summaryModel: ScriptedProvider;
specTest(
  "an HTTP Environment granted model calls the session's model through the model execution service, under the Tool's identity; one without the grant gets no service",
  async (brain) => {
    await using _server = summarizer;
    const summarize = (name: string) =>
      tool({
        name,
        description: "Summarizes remotely.",
        input: z.object({}),
        output: z.object({ summary: z.string().nullable() }),
        implementation: () => ({ type: "http_json", method: "POST", path: "/summarize" }),
      });
    const granted = httpEnv({ name: "granted", baseUrl: summarizer.url, model: true });
    const plain = httpEnv({ name: "plain", baseUrl: summarizer.url });
    const session = await brain.sessions.create({
      tools: [summarize("summarize")({ env: granted }), summarize("unsummarized")({ env: plain })],
      model: "default",
    });
    assert.deepEqual((await session.call("unsummarized", {})).outcome, ok({ summary: null }));
    const end = await session.call("summarize", {});
    assert.deepEqual(end.outcome, ok({ summary: "short" }));
    const started = (await session.read()).find((record) => record.kind === "model_call_started");
    assert.deepEqual(started?.kind === "model_call_started" && started.origin, {
      kind: "tool",
      tool: "summarize",
      call: end.call,
    });
    assert.deepEqual(summaryModel.calls.map((call) => call.request), [{
      messages: [{ role: "user", content: "Summarize." }],
      system: "",
      tools: [],
    }]);
  },
  () => {
    summarizer = serve(async (request) => {
      const url = request.headers.get(MODEL_URL_HEADER);
      if (url === null) return Response.json({ summary: null });
      const answer = await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${request.headers.get(MODEL_TOKEN_HEADER)}` },
        body: JSON.stringify({ messages: [{ role: "user", content: "Summarize." }] }),
      });
      return Response.json({ summary: (await answer.json()).content });
    });
    summaryModel = new ScriptedProvider(["short"]);
    return { allow: { net: [summarizer.host] }, models: { default: { provider: summaryModel, model: "fixed" } } };
  },
);

let budgetModel: ScriptedProvider;
specTest(
  "a Tool keeps its originating activation's model-call budget after the activation returns; a later activation does not renew it",
  async (brain) => {
    const [first, second] = [gate(), gate()];
    const outcomes: JsonValue[] = [];
    const asked = [Promise.withResolvers<void>(), Promise.withResolvers<void>()];
    const ask = (ctx: ToolContext, content: string) =>
      ctx.model({ messages: [{ role: "user", content }] }).then((result) => result.content, (error) => error.code);
    const background = tool({
      name: "background",
      description: "Calls the model after its activation returned.",
      input: z.object({}),
      run: (_input, ctx) => {
        void (async () => {
          await first.wait;
          outcomes.push(await ask(ctx as unknown as ToolContext, "later 1"));
          asked[0].resolve();
          await second.wait;
          outcomes.push(await ask(ctx as unknown as ToolContext, "later 2"));
          asked[1].resolve();
          await ctx.finish();
        })();
      },
    });
    const session = await brain.sessions.create({ tools: [background()], model: "default" });
    assert.equal(
      (await session.send("start")).content,
      "started",
      "the activation returned after two of its three calls",
    );
    first.open();
    await withDeadline(asked[0].promise, "the Tool's first model call");
    assert.deepEqual(outcomes, ["tool answer"]);
    assert.equal((await session.send("again")).content, "new activation answer");
    second.open();
    await withDeadline(asked[1].promise, "the Tool's second model call");
    await until(session, (seen) => ofKind(seen, "tool_call_finished").length === 1, "the background finish");
    assert.deepEqual(outcomes, ["tool answer", "budget_exceeded"]);
    assert.equal(budgetModel.calls.length, 4);
  },
  () => {
    budgetModel = new ScriptedProvider([
      { toolCalls: [{ id: "b", name: "background", input: {} }] },
      "started",
      "tool answer",
      "new activation answer",
      "never used",
    ]);
    return { maxModelCalls: 3, models: { default: { provider: budgetModel, model: "m" } } };
  },
);

let journaledModel: ScriptedProvider;
specTest(
  "a Tool's model call is journaled, usage and outcome, before its response returns, and takes nothing of the conversation's prompt or tools",
  async (brain) => {
    const atAnswer = Promise.withResolvers<JsonValue>();
    const held: { session?: BrainSession } = {};
    const careful = tool({
      name: "careful",
      description: "Asks the model, then reads the journal.",
      input: z.object({}),
      run: async (_input, ctx) => {
        const answer = await ctx.model({ messages: [{ role: "user", content: "q" }] });
        const finished = (await held.session!.read()).filter((record) => record.kind === "model_call_finished");
        atAnswer.resolve(
          finished.map((record) =>
            record.kind === "model_call_finished" && [record.outcome.status, (record.usage?.outputTokens ?? 0) > 0]
          ),
        );
        return ctx.finish(answer.content);
      },
    });
    const session = held.session = await brain.sessions.create({
      tools: [careful(), asker()],
      model: "default",
      agentloop: { system: "Conversation prompt." },
    });
    assert.deepEqual((await session.call("careful", {})).outcome, ok("one"));
    assert.deepEqual(await atAnswer.promise, [["ok", true]], "usage and outcome were committed before the answer");
    assert.deepEqual(journaledModel.calls.map((call) => call.request), [
      { messages: [{ role: "user", content: "q" }], system: "", tools: [] },
    ]);
  },
  () => ({ models: { default: { provider: journaledModel = provider(), model: "fixed" } } }),
);
