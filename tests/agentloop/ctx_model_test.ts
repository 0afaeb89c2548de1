import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainError, type BrainSession, openAICompatible, tool } from "../../mod.ts";
import type { ModelResult } from "../../src/model/types.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { chatServer, completion } from "../model/chat_server.ts";
import { gate } from "../_support/gate.ts";
import { lookup } from "../../examples/lookup.ts";
import { ofKind, until } from "../_support/until.ts";
import { hasCode } from "../_support/has_code.ts";
import { answersBothAtOnce, askBoth, asker, askingTool, hanging, modelWaiter } from "../_support/model_askers.ts";

Deno.test("ctx.model uses the session's provider, model and credentials with only the Tool's own messages", async () => {
  await using brain = new Brain();
  const { ask, seen } = askingTool(() => session);
  const provider = new ScriptedProvider([
    { toolCalls: [{ id: "t", name: "ask", input: { question: "2+2?" } }] },
    "4",
    "The answer is 4.",
  ]);
  const session: BrainSession = await brain.sessions.create({
    tools: [ask(), lookup({ prefix: "customer:" })],
    model: { provider, model: "fixed-model", credentials: { apiKey: "secret" } },
    agentloop: { system: "Conversation prompt." },
  });
  assert.equal((await session.send("Use ask.")).content, "The answer is 4.");
  const toolCall = provider.calls[1];
  assert.equal(toolCall.model, "fixed-model");
  assert.deepEqual(toolCall.credentials, { apiKey: "secret" });
  assert.deepEqual(toolCall.request, { messages: [{ role: "user", content: "2+2?" }], system: "", tools: [] });
  assert.equal("responseFormat" in toolCall.request, false);
  assert.equal(
    seen.kindsAtAnswer.at(-1),
    "model_call_finished",
    "usage and outcome were committed before the response returned",
  );
  const records = await session.read();
  const [, started] = ofKind(records, "model_call_started");
  const [toolStarted] = ofKind(records, "tool_call_started");
  assert.deepEqual(started.origin, { kind: "tool", tool: "ask", call: toolStarted.sequence });
  assert.equal(started.activation, toolStarted.activation);
  const finished = ofKind(records, "model_call_finished").find((record) => record.call === started.sequence)!;
  assert.deepEqual(finished.outcome, {
    status: "ok",
    value: { content: "4", toolCalls: [], stopReason: "stop", model: "fixed-model" },
  });
  assert.ok(finished.usage!.outputTokens > 0);
  assert.equal(ofKind(records, "assistant_message").length, 2, "a Tool's model call adds no assistant message");
  assert.equal(JSON.stringify(records).includes("secret"), false, "credentials are never journaled");
});

Deno.test("concurrent ctx.model calls keep each Tool's identity in origin", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({
    tools: [asker("alpha")(), asker("beta")()],
    model: { provider: answersBothAtOnce(), model: "m" },
  });
  const { a, b, modelCalls } = await askBoth(session);
  const records = await session.read();
  for (const started of ofKind(records, "model_call_started")) {
    assert.equal(started.origin.kind, "tool");
    const origin = started.origin as { tool: string; call: number };
    assert.ok("request" in started, "a Tool's model call keeps its whole request");
    assert.equal((started.request.messages[0] as { content: string }).content, origin.tool);
    assert.equal(origin.call, origin.tool === "alpha" ? a.call : b.call);
  }
  assert.equal(modelCalls, 2);
  assert.equal(ofKind(records, "assistant_message").length, 0);
});

Deno.test("a Tool keeps its activation's model-call budget after the activation returns; a new one does not renew it", async () => {
  await using brain = new Brain({ maxModelCalls: 3 });
  const first = gate();
  const second = gate();
  const outcomes: string[] = [];
  const ask = (ctx: { model(request: unknown): Promise<ModelResult> }, content: string) =>
    ctx.model({ messages: [{ role: "user", content }] }).then(
      (result) => result.content,
      (error: BrainError) => error.code,
    );
  const background = tool({
    name: "background",
    description: "Calls the model later.",
    input: z.object({}),
    run: (_input, ctx) => {
      void (async () => {
        await first.wait;
        outcomes.push(await ask(ctx, "later 1"));
        await second.wait;
        outcomes.push(await ask(ctx, "later 2"));
        await ctx.finish();
      })();
    },
  });
  const provider = new ScriptedProvider([
    { toolCalls: [{ id: "b", name: "background", input: {} }] },
    "started",
    "tool answer",
    "new activation answer",
    "never used",
  ]);
  const session = await brain.sessions.create({ tools: [background()], model: { provider, model: "m" } });
  assert.equal(
    (await session.send("start")).content,
    "started",
    "the activation returned after two of its three calls",
  );
  first.open();
  await until(session, (seen) => ofKind(seen, "model_call_finished").length === 3, "the Tool's first model call");
  assert.deepEqual(outcomes, ["tool answer"]);
  assert.equal((await session.send("again")).content, "new activation answer");
  second.open();
  await until(session, (seen) => ofKind(seen, "tool_call_finished").length === 1, "the background finish");
  assert.deepEqual(outcomes, ["tool answer", "budget_exceeded"]);
  assert.equal(provider.calls.length, 4);
});

Deno.test("a Tool's completion stops its pending model request; the call ends unknown and is not replayed", async () => {
  await using brain = new Brain();
  let pending: Promise<unknown> | undefined;
  const hasty = tool({
    name: "hasty",
    description: "Finishes while its model call is pending.",
    input: z.object({}),
    run: async (_input, ctx) => {
      pending = ctx.model({ messages: [{ role: "user", content: "slow" }] }).catch((error) => error);
      await until(session, (seen) => ofKind(seen, "model_call_started").length === 1, "the model call");
      return ctx.finish("done");
    },
  });
  const provider = new ScriptedProvider([hanging()]);
  const session = await brain.sessions.create({ tools: [hasty()], model: { provider, model: "m" } });
  const end = await session.call("hasty", {});
  assert.equal(end.outcome.status, "ok");
  const error = await pending;
  assert.ok(hasCode("call_finished")(error));
  const records = await until(
    session,
    (seen) => ofKind(seen, "model_call_finished").length === 1,
    "the unknown outcome",
  );
  assert.equal(ofKind(records, "model_call_finished")[0].outcome.status, "unknown");
  assert.equal(provider.calls.length, 1);
  assert.equal(provider.calls[0].signal.aborted, true, "the provider was told to stop");
});

Deno.test("the Tool's original deadline stops its pending model request", async () => {
  await using brain = new Brain();
  const { waiter, settled, seen } = modelWaiter();
  const session = await brain.sessions.create({
    tools: [waiter()],
    model: { provider: new ScriptedProvider([hanging()]), model: "m" },
  });
  const end = await session.call("waiter", {}, { deadline: Date.now() + 30 });
  assert.equal(end.cause, "timeout");
  const records = await until(
    session,
    (seen) => ofKind(seen, "model_call_finished").length === 1,
    "the unknown outcome",
  );
  assert.equal(ofKind(records, "model_call_finished")[0].outcome.status, "unknown");
  await settled.wait;
  assert.ok(hasCode("timeout")(seen.caught));
});

Deno.test("cancelling a Tool call interrupts its model request with an unknown outcome", async () => {
  await using brain = new Brain();
  const waiter = tool({
    name: "waiter",
    description: "Waits for the model.",
    input: z.object({}),
    run: async (_input, ctx) => ctx.finish((await ctx.model({ messages: [{ role: "user", content: "x" }] })).content),
  });
  const provider = new ScriptedProvider([hanging()]);
  const session = await brain.sessions.create({ tools: [waiter()], model: { provider, model: "m" } });
  const call = await session.start("waiter", {});
  await until(session, (seen) => ofKind(seen, "model_call_started").length === 1, "the model call");
  assert.equal((await call.cancel()).cause, "cancelled");
  const records = await until(session, (seen) => ofKind(seen, "model_call_finished").length === 1, "the outcome");
  assert.deepEqual(ofKind(records, "model_call_finished")[0].outcome, {
    status: "unknown",
    message: "the model call was interrupted",
  });
});

Deno.test("ctx.model refuses bad requests (with or without a model) and calls after finish", async () => {
  await using brain = new Brain();
  const errors: string[] = [];
  const probe = tool({
    name: "probe",
    description: "Probes ctx.model.",
    input: z.object({}),
    run: async (_input, ctx) => {
      const code = (error: BrainError) => errors.push(error.code);
      await ctx.model({ messages: [{ role: "user", content: "x" }], model: "other" } as never).catch(code);
      await ctx.model({ messages: [] }).catch(code);
      const finished = ctx.finish(null);
      await ctx.model({ messages: [{ role: "user", content: "x" }] }).catch(code);
      return finished;
    },
  });
  const provider = new ScriptedProvider([]);
  const session = await brain.sessions.create({ tools: [probe()], model: { provider, model: "m" } });
  await session.call("probe", {});
  assert.deepEqual(errors, ["invalid_argument", "invalid_argument", "call_finished"]);
  assert.equal(ofKind(await session.read(), "model_call_started").length, 0);
  assert.equal(provider.calls.length, 0);

  const bare = await brain.sessions.create({ tools: [probe()] });
  errors.length = 0;
  await bare.call("probe", {});
  assert.deepEqual(
    errors,
    ["invalid_argument", "invalid_argument", "call_finished"],
    "malformed with or without a model",
  );
});

Deno.test("ctx.model over the OpenAI-compatible provider journals usage, errors and a dropped connection as unknown", async () => {
  await using server = chatServer([
    { reply: completion({ content: "summary" }) },
    { status: 503, body: JSON.stringify({ error: { message: "busy" } }) },
    { drop: true },
  ]);
  await using brain = new Brain();
  const results: string[] = [];
  const thrice = tool({
    name: "thrice",
    description: "Calls the model three times.",
    input: z.object({}),
    run: async (_input, ctx) => {
      for (let index = 0; index < 3; index++) {
        results.push(
          await ctx.model({ messages: [{ role: "user", content: "go" }] }).then(
            (result) => result.content,
            (error: BrainError) => error.code,
          ),
        );
      }
      return ctx.finish(results);
    },
  });
  const session = await brain.sessions.create({
    tools: [thrice()],
    model: {
      provider: openAICompatible({ baseUrl: server.baseUrl }),
      model: "gpt-test",
      credentials: { apiKey: "sk" },
    },
  });
  await session.call("thrice", {});
  assert.deepEqual(results, ["summary", "model_error", "connection_lost"]);
  const finished = ofKind(await session.read(), "model_call_finished");
  assert.deepEqual(finished.map((record) => record.outcome.status), ["ok", "error", "unknown"]);
  assert.deepEqual(finished[0].usage, { inputTokens: 11, outputTokens: 7 });
  const busy = finished[1].outcome as { error: { retryable?: boolean } };
  assert.equal(busy.error.retryable, true);
  assert.equal(server.seen.length, 3, "each request was sent once");
  assert.ok(server.seen.every((seen) => seen.authorization === "Bearer sk" && seen.body.model === "gpt-test"));
});

Deno.test("ctx.model resolves with the frozen response as journaled, usage beside it", async () => {
  await using brain = new Brain();
  const provider = new ScriptedProvider([{
    content: "hi",
    toolCalls: [{ id: "t1", name: "x", input: { deep: [1] } }],
    usage: { inputTokens: 3, outputTokens: 4 },
  }]);
  let result: ModelResult | undefined;
  const ask = tool({
    name: "ask",
    description: "Asks the model.",
    input: z.object({}),
    run: async (_input, ctx) => {
      result = await ctx.model({ messages: [{ role: "user", content: "q" }] });
      return ctx.finish(null);
    },
  });
  const session = await brain.sessions.create({ tools: [ask()], model: { provider, model: "m" } });
  await session.call("ask", {});
  assert.deepEqual(result, {
    content: "hi",
    toolCalls: [{ id: "t1", name: "x", input: { deep: [1] } }],
    stopReason: "tool_calls",
    model: "m",
    usage: { inputTokens: 3, outputTokens: 4 },
  });
  assert.ok(Object.isFrozen(result) && Object.isFrozen(result!.toolCalls[0].input));
  const [finished] = ofKind(await session.read(), "model_call_finished");
  assert.deepEqual(finished.usage, result!.usage);
  const { usage: _usage, ...response } = result!;
  assert.deepEqual(finished.outcome, { status: "ok", value: response });
});
