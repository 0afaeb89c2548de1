import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, type BrainOptions, openAICompatible, tool } from "../../mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { serveBrain, type ServedBrain } from "../../src/host/server/server.ts";
import { gate } from "../_support/gate.ts";
import { lookup } from "../../examples/lookup.ts";
import { journalRecords, ofKind, until } from "../_support/until.ts";
import { chatServer, completion } from "../model/chat_server.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { answersBothAtOnce, askBoth, asker, askingTool, hanging, modelWaiter } from "../_support/model_askers.ts";
import { ONE_TOOL_TURN } from "../_support/record_kinds.ts";

const SECRET = "server-only-model-key";

/** A provider step that answers only when its call is aborted, by rejecting. */
/** A Brain server whose `default` model is `provider`, a client connected to it as `host`, disposed together. */
async function connected(
  provider: ScriptedProvider,
  host: string,
  options: BrainOptions = {},
): Promise<{
  server: ServedBrain;
  brain: Brain;
  key: (session: string) => string;
  [Symbol.asyncDispose](): Promise<void>;
}> {
  const server = await serveBrain({
    serverToken: "operator-secret",
    ...options,
    models: { default: { provider, model: "fixed-model", credentials: { apiKey: SECRET } } },
  });
  const brain = new Brain({ url: server.url, serverToken: "operator-secret", token: `${host}-token`, host });
  return {
    server,
    brain,
    key: (session) => hostSessionKey(host, session),
    async [Symbol.asyncDispose]() {
      await brain.close();
      await server.shutdown();
    },
  };
}

Deno.test("ctx.model in a remote host Tool runs on the server's model, with the Tool's origin, journaled before the reply", async () => {
  const provider = new ScriptedProvider(["4"]);
  await using remote = await connected(provider, "asker");
  const { ask, seen } = askingTool(() => session);
  const session = await remote.brain.sessions.create({ tools: [ask()], model: "default" });
  const end = await session.call("ask", { question: "2+2?" });
  assert.deepEqual(end.outcome, { status: "ok", value: "4" });

  assert.equal(provider.calls.length, 1);
  const [call] = provider.calls;
  assert.equal(call.model, "fixed-model");
  assert.deepEqual(call.credentials, { apiKey: SECRET }, "the server's credentials apply");
  assert.deepEqual(call.request, { messages: [{ role: "user", content: "2+2?" }], system: "", tools: [] });
  assert.equal(seen.kindsAtAnswer.at(-1), "model_call_finished", "usage and outcome were committed before the reply");

  const records = await session.read();
  const [started] = ofKind(records, "model_call_started");
  const [toolStarted] = ofKind(records, "tool_call_started");
  assert.deepEqual(started.origin, { kind: "tool", tool: "ask", call: end.call });
  assert.equal(started.activation, toolStarted.activation);
  assert.deepEqual([started.provider, started.model], ["scripted", "fixed-model"]);
  const [finished] = ofKind(records, "model_call_finished");
  assert.ok(finished.usage!.outputTokens > 0);
  assert.deepEqual((await remote.server.journal.getSession(remote.key(session.id)))?.model, {
    provider: "scripted",
    model: "fixed-model",
  });
  const visible = JSON.stringify([records, await remote.brain.sessions.list()]);
  assert.equal(visible.includes(SECRET), false, "credentials reach neither the client nor the journal");
});

Deno.test("send() runs a full turn on the server: the model calls a remote host Tool and answers from its result", async () => {
  const provider = new ScriptedProvider([
    { toolCalls: [{ id: "t1", name: "lookup", input: { id: "7" } }] },
    "The record is Ada Lovelace.",
  ]);
  await using remote = await connected(provider, "turner");
  const session = await remote.brain.sessions.create({
    tools: [lookup({ prefix: "customer:" })],
    model: "default",
    agentloop: { system: "Be brief.", toolDeadlineMs: Infinity },
  });
  const reply = await session.send("Find record 7.");
  assert.equal(reply.content, "The record is Ada Lovelace.");
  assert.deepEqual((await session.read()).map((record) => record.kind), ONE_TOOL_TURN);
  const [first, second] = provider.calls;
  assert.equal(first.request.system, "Be brief.", "the Agentloop options travelled");
  assert.deepEqual(first.request.tools.map((spec) => spec.name), ["lookup"]);
  const answer = second.request.messages.find((message) => message.role === "tool");
  assert.deepEqual(answer, { role: "tool", toolCallId: "t1", content: JSON.stringify({ value: "Ada Lovelace" }) });
  const [started] = ofKind(await session.read(), "tool_call_started");
  assert.equal(started.deadline, undefined, "toolDeadlineMs: Infinity reached the server as no deadline");
});

Deno.test("a remote Tool's ctx.model shares its activation's model-call budget with the server's Agentloop", async () => {
  const provider = new ScriptedProvider([
    { toolCalls: [{ id: "t1", name: "ask", input: {} }] },
    "tool answer",
    "never used",
  ]);
  await using remote = await connected(provider, "budgeted", { maxModelCalls: 2 });
  const outcomes: string[] = [];
  const ask = tool({
    name: "ask",
    description: "Calls the model twice.",
    input: z.object({}),
    run: async (_input, ctx) => {
      for (const content of ["first", "second"]) {
        outcomes.push(
          await ctx.model({ messages: [{ role: "user", content }] }).then(
            (result) => result.content,
            (error: BrainError) => error.code,
          ),
        );
      }
      return ctx.finish(outcomes);
    },
  });
  const session = await remote.brain.sessions.create({ tools: [ask()], model: "default" });
  await assert.rejects(session.send("go"), { code: "budget_exceeded" }, "the loop's next turn found the budget spent");
  assert.deepEqual(outcomes, ["tool answer", "budget_exceeded"]);
  assert.equal(provider.calls.length, 2);
  const records = await session.read();
  const [toolStarted] = ofKind(records, "tool_call_started");
  assert.deepEqual(ofKind(records, "model_call_started").map((record) => record.activation), [
    toolStarted.activation,
    toolStarted.activation,
  ]);
});

Deno.test("remote calls started with one activation share its model-call budget on the server", async () => {
  const provider = new ScriptedProvider(["one", "two"]);
  await using remote = await connected(provider, "shared", { maxModelCalls: 1 });
  const ask = tool({
    name: "ask",
    description: "Calls the model once.",
    input: z.object({}),
    run: async (_input, ctx) =>
      ctx.finish(
        await ctx.model({ messages: [{ role: "user", content: "x" }] }).then(
          (result) => result.content,
          (error: BrainError) => error.code,
        ),
      ),
  });
  const session = await remote.brain.sessions.create({ tools: [ask()], model: "default" });
  const activation = session.activation();
  const first = await session.call("ask", {}, { activation });
  const second = await session.call("ask", {}, { activation });
  const fresh = await session.call("ask", {});
  assert.deepEqual([first.outcome, second.outcome, fresh.outcome], [
    { status: "ok", value: "one" },
    { status: "ok", value: "budget_exceeded" },
    { status: "ok", value: "two" },
  ]);
});

Deno.test("interrupting a remote session stops the server's pending model call: unknown, never replayed", async () => {
  const provider = new ScriptedProvider([hanging(), "after the interruption"]);
  await using remote = await connected(provider, "interrupter");
  const session = await remote.brain.sessions.create({ model: "default" });
  const reply = session.send("Take your time.");
  await until(session, (seen) => ofKind(seen, "model_call_started").length === 1, "the model call");
  session.interrupt();
  await assert.rejects(reply, { code: "cancelled" });
  const records = await until(session, (seen) => ofKind(seen, "model_call_finished").length === 1, "its outcome");
  assert.deepEqual(ofKind(records, "model_call_finished")[0].outcome, {
    status: "unknown",
    message: "the model call was interrupted",
  });
  assert.equal(provider.calls[0].signal.aborted, true, "the provider was told to stop");
  assert.equal((await session.send("Again.")).content, "after the interruption");
  assert.equal(provider.calls.length, 2, "the interrupted call was not sent again");
  assert.equal(provider.calls[1].request.messages.at(-1)?.content, "Again.");
});

Deno.test("a lost connection during a remote ctx.model ends the call and its model request unknown, never replayed", async () => {
  const provider = new ScriptedProvider([hanging()]);
  await using remote = await connected(provider, "fragile");
  const { waiter, settled, seen } = modelWaiter();
  const quick = tool({
    name: "quick",
    description: "Finishes at once.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish("quick"),
  });
  const session = await remote.brain.sessions.create({ tools: [waiter(), quick()], model: "default" });
  const call = await session.start("waiter", {});
  await until(
    journalRecords(remote.server.journal, remote.key(session.id)),
    (seen) => ofKind(seen, "model_call_started").length === 1,
  );
  assert.equal(remote.server.dropHost("fragile"), true);

  const end = await call.ended;
  assert.deepEqual([end.cause, end.outcome.status], ["unknown", "unknown"]);
  const records = await until(
    journalRecords(remote.server.journal, remote.key(session.id)),
    (seen) => ofKind(seen, "model_call_finished").length === 1,
  );
  assert.deepEqual(ofKind(records, "model_call_finished")[0].outcome.status, "unknown");
  await settled.wait;
  assert.ok(hasCode("connection_lost")(seen.caught), "the Tool learns the reply is lost");
  assert.equal(provider.calls[0].signal.aborted, true, "the pending provider call was stopped");

  assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
  assert.equal(provider.calls.length, 1, "the model request was never sent again");
  assert.equal(ofKind(await session.read(), "model_call_started").length, 1);
});

Deno.test("a remote Tool's completion and its original deadline stop its pending ctx.model on the server", async () => {
  const provider = new ScriptedProvider([hanging(), hanging()]);
  await using remote = await connected(provider, "stopper");
  const errors: Record<string, Promise<unknown>> = {};
  const hasty = tool({
    name: "hasty",
    description: "Finishes while its model call is pending.",
    input: z.object({}),
    run: async (_input, ctx) => {
      const pending = ctx.model({ messages: [{ role: "user", content: "slow" }] }).catch((error) => error);
      await until(session, (seen) => ofKind(seen, "model_call_started").length === 1, "the model call");
      errors.hasty = pending;
      return ctx.finish("done");
    },
  });
  const settled = gate();
  const waiter = tool({
    name: "waiter",
    description: "Waits for the model.",
    input: z.object({}),
    run: async (_input, ctx) => {
      errors.waiter = ctx.model({ messages: [{ role: "user", content: "slow" }] }).catch((error) => error);
      await errors.waiter;
      settled.open();
    },
  });
  const session = await remote.brain.sessions.create({ tools: [hasty(), waiter()], model: "default" });
  assert.deepEqual((await session.call("hasty", {})).outcome, { status: "ok", value: "done" });
  assert.equal((await session.call("waiter", {}, { deadline: Date.now() + 50 })).cause, "timeout");
  await settled.wait;
  const codes = await Promise.all([errors.hasty, errors.waiter]);
  assert.deepEqual(codes.map((error) => error instanceof BrainError && error.code), ["call_finished", "timeout"]);
  const records = await until(
    journalRecords(remote.server.journal, remote.key(session.id)),
    (seen) => ofKind(seen, "model_call_finished").length === 2,
  );
  assert.deepEqual(ofKind(records, "model_call_finished").map((record) => record.outcome.status), [
    "unknown",
    "unknown",
  ]);
  assert.equal(provider.calls.length, 2, "neither request was sent again");
  assert.ok(provider.calls.every((call) => call.signal.aborted), "each provider call was told to stop");
});

Deno.test("concurrent remote ctx.model calls keep each Tool's identity in origin and add no assistant message", async () => {
  await using remote = await connected(answersBothAtOnce(), "concurrent");
  const session = await remote.brain.sessions.create({ tools: [asker("alpha")(), asker("beta")()], model: "default" });
  const { a, b } = await askBoth(session);
  const records = await session.read();
  const origins = ofKind(records, "model_call_started").map((started) => started.origin);
  assert.deepEqual(
    origins.sort((x, y) => (x as { call: number }).call - (y as { call: number }).call),
    [{ kind: "tool", tool: "alpha", call: a.call }, { kind: "tool", tool: "beta", call: b.call }],
  );
  assert.equal(ofKind(records, "assistant_message").length, 0);
});

Deno.test("a send whose connection drops fails connection_lost and is not resent; the server's loop still answers", async () => {
  const release = gate();
  const provider = new ScriptedProvider([async () => {
    await release.wait;
    return "answered anyway";
  }]);
  await using remote = await connected(provider, "impatient");
  const session = await remote.brain.sessions.create({ model: "default" });
  const reply = session.send("Hello?");
  await until(
    journalRecords(remote.server.journal, remote.key(session.id)),
    (seen) => ofKind(seen, "model_call_started").length === 1,
  );
  assert.equal(remote.server.dropHost("impatient"), true);
  await assert.rejects(reply, { code: "connection_lost" });
  release.open();
  const records = await until(session, (seen) => ofKind(seen, "assistant_message").length === 1, "the answer");
  assert.equal(ofKind(records, "assistant_message")[0].content, "answered anyway");
  assert.equal(ofKind(await session.read(), "user_message").length, 1, "the message was not sent twice");
  assert.equal(provider.calls.length, 1);
});

Deno.test("a remote session over the OpenAI-compatible provider: a full turn with ctx.model, the key only on the server", async () => {
  await using chat = chatServer([
    {
      reply: completion({
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "summarize", arguments: '{"text":"long"}' } }],
      }, { finish_reason: "tool_calls" }),
    },
    { reply: completion({ content: "short" }) },
    { reply: completion({ content: "The summary is: short." }) },
  ]);
  await using server = await servedBrain({
    serverToken: "operator-secret",
    models: {
      default: {
        provider: openAICompatible({ baseUrl: chat.baseUrl }),
        model: "gpt-test",
        credentials: { apiKey: SECRET },
      },
    },
  });
  await using brain = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "openai-token",
    host: "summarizer",
  });
  const summarize = tool({
    name: "summarize",
    description: "Summarizes text with the model.",
    input: z.object({ text: z.string() }),
    run: async ({ text }, ctx) => {
      const result = await ctx.model({ system: "Summarize.", messages: [{ role: "user", content: text }] });
      return ctx.finish(result.content);
    },
  });
  const session = await brain.sessions.create({ tools: [summarize()], model: "default" });
  assert.equal((await session.send("Summarize 'long'.")).content, "The summary is: short.");
  assert.equal(chat.seen.length, 3, "each request was sent once");
  assert.ok(chat.seen.every((seen) => seen.authorization === `Bearer ${SECRET}` && seen.body.model === "gpt-test"));
  assert.deepEqual(chat.seen[1].body.messages, [
    { role: "system", content: "Summarize." },
    { role: "user", content: "long" },
  ]);
  const records = await session.read();
  const finished = ofKind(records, "model_call_finished");
  assert.deepEqual(finished.map((record) => record.usage), Array(3).fill({ inputTokens: 11, outputTokens: 7 }));
  assert.deepEqual(ofKind(records, "model_call_started")[1].origin, {
    kind: "tool",
    tool: "summarize",
    call: ofKind(records, "tool_call_started")[0].sequence,
  });
  assert.equal(JSON.stringify([records, await brain.sessions.list()]).includes(SECRET), false);
});
