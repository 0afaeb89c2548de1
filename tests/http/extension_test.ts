import assert from "node:assert/strict";
import { Hono } from "hono";
import { z } from "zod";
import { Brain, BrainError, type BrainSession, fail, type Finished, tool } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { extensionEnv } from "../../src/extension/extension_env.ts";
import { toolExtension } from "../../src/extension/extension.ts";
import { serve } from "../_support/serve.ts";
import { soon } from "../_support/deadline.ts";
import { RETURNED_THEN_FINISHED } from "../_support/record_kinds.ts";

const codeOf = (error: unknown) => error instanceof BrainError ? error.code : String(error);

let session: BrainSession | undefined;
const observed: {
  emitted?: number;
  finished?: Finished;
  journalAtFinish?: JournalRecord[];
  refused?: Record<string, string>;
  late: PromiseWithResolvers<string>;
  acknowledged: PromiseWithResolvers<void>;
  errorAck: PromiseWithResolvers<string>;
} = { late: Promise.withResolvers(), acknowledged: Promise.withResolvers(), errorAck: Promise.withResolvers() };

const lookup = tool({
  name: "lookup",
  description: "Look up one record.",
  input: z.object({ id: z.string() }),
  output: z.object({ key: z.string(), partial: z.boolean() }),
  options: z.object({ prefix: z.string() }),
  run: async ({ id }, ctx) => {
    observed.refused = {
      emit: await ctx.emit("lookup_started", { id }).then(String, codeOf),
      environments: await ctx.environments.list().then(String, codeOf),
      model: await ctx.model({ messages: [{ role: "user", content: "hi" }] }).then(String, codeOf),
    };
    observed.emitted = await ctx.emitResult({ key: `${ctx.options.prefix}${id}`, partial: true }, {
      content: "so far",
    });
    observed.finished = await ctx.finish({ key: `${ctx.options.prefix}${id}`, partial: false });
    observed.journalAtFinish = await session!.read();
    observed.acknowledged.resolve();
    return observed.finished;
  },
});

const forgetful = tool({
  name: "forgetful",
  description: "Returns without finishing, then works past its request.",
  input: z.object({}),
  run: (_, ctx) => {
    ctx.signal.addEventListener("abort", () => {
      ctx.emitResult("too late").then(String, codeOf).then((late) => observed.late.resolve(late));
    });
  },
});

const sloppy = tool({
  name: "sloppy",
  description: "Finishes with output that does not match.",
  input: z.object({}),
  output: z.object({ n: z.number() }),
  run: (_, ctx) => ctx.finish({ n: "one" } as never),
});

const refusing = tool({
  name: "refusing",
  description: "Publishes an error result, which ends the call.",
  input: z.object({}),
  run: async (_, ctx) => {
    const sequence = await ctx.emitResult(fail("not_found", "no such record")).then(String, codeOf);
    observed.errorAck.resolve(sequence);
  },
});

const background = tool({
  name: "background",
  description: "Returns a result, then finishes in the background within the request.",
  input: z.object({}),
  run: (_, ctx) => {
    setTimeout(() => ctx.finish({ step: 2 }).catch(() => {}), 20);
    return { step: 1 };
  },
});

const absent = tool({ name: "absent", description: "Not served.", input: z.object({}), run: (_, ctx) => ctx.finish() });

async function withExtension(
  test: (brainSession: BrainSession, url: string) => Promise<void>,
  { token = "secret", brainToken = token }: { token?: string; brainToken?: string } = {},
) {
  observed.late = Promise.withResolvers();
  observed.acknowledged = Promise.withResolvers();
  observed.errorAck = Promise.withResolvers();
  const extension = toolExtension({
    tools: [lookup({ prefix: "customer:" }), forgetful(), sloppy(), refusing(), background()],
    lifetimeMs: 300,
    token,
  });
  const app = new Hono();
  app.mount("/brain", extension.fetch);
  await using server = serve(app.fetch);
  await using brain = new Brain({ allow: { net: [server.host] } });
  const env = extensionEnv({ name: "app-http", url: `${server.url}/brain`, token: brainToken });
  session = await brain.sessions.create({
    tools: [
      lookup({ env, prefix: "customer:" }),
      forgetful({ env }),
      sloppy({ env }),
      refusing({ env }),
      background({ env }),
      absent({ env }),
    ],
  });
  await test(session, server.url);
}

Deno.test("extension: same declaration, configured options, results committed before ctx resolves", async () => {
  await withExtension(async (brainSession) => {
    const end = await brainSession.call("lookup", { id: "7" }, { deadline: soon() });
    assert.equal(end.cause, "finish");
    assert.deepEqual(end.outcome, { status: "ok", value: { key: "customer:7", partial: false } });
    const records = await brainSession.read();
    assert.deepEqual(records.map((record) => record.kind), [
      "tool_call_started",
      "tool_result",
      "tool_result",
      "tool_call_finished",
    ]);
    await observed.acknowledged.promise;
    assert.equal(observed.emitted, records[1].sequence, "emitResult resolves with the committed sequence");
    assert.equal(records[1].kind === "tool_result" && records[1].content, "so far");
    assert.equal(observed.finished?.sequence, records[3].sequence, "finish resolves with the terminal sequence");
    assert.equal(observed.finished?.late, false);
    assert.equal(observed.journalAtFinish?.at(-1)?.kind, "tool_call_finished", "finish was durable when it resolved");
  });
});

Deno.test("extension: a result that ends the call is still acknowledged with its committed sequence", async () => {
  await withExtension(async (brainSession) => {
    const end = await brainSession.call("refusing", {}, { deadline: soon() });
    assert.equal(end.outcome.status === "error" && end.outcome.error.code, "not_found");
    const result = (await brainSession.read()).find((record) => record.kind === "tool_result");
    assert.equal(await observed.errorAck.promise, String(result?.sequence));
  });
});

Deno.test("extension: a returned value ends the synchronous phase; a later finish in the request completes", async () => {
  await withExtension(async (brainSession) => {
    const end = await brainSession.call("background", {}, { deadline: soon() });
    assert.deepEqual(end.outcome, { status: "ok", value: { step: 2 } });
    const records = await brainSession.read();
    assert.deepEqual(records.map((record) => record.kind), RETURNED_THEN_FINISHED);
    assert.deepEqual(records[1].kind === "tool_result" && records[1].outcome, { status: "ok", value: { step: 1 } });
  });
});

Deno.test("extension: no arbitrary events, no model calls and no Environment control", async () => {
  await withExtension(async (brainSession) => {
    await brainSession.call("lookup", { id: "1" }, { deadline: soon() });
    await observed.acknowledged.promise;
    assert.deepEqual(observed.refused, {
      emit: "permission_denied",
      environments: "permission_denied",
      model: "permission_denied",
    });
    assert.equal((await brainSession.read()).some((record) => record.kind === "tool_event"), false);
  });
});

Deno.test("extension: a Tool exceeding its request lifetime ends lifetime_exceeded and later work is refused", async () => {
  await withExtension(async (brainSession) => {
    const end = await brainSession.call("forgetful", {}, { deadline: soon() });
    assert.equal(end.cause, "error");
    assert.equal(end.outcome.status === "error" && end.outcome.error.code, "lifetime_exceeded");
    const kinds = (await brainSession.read()).map((record) => record.kind);
    assert.deepEqual(kinds, ["tool_call_started", "tool_returned", "tool_result", "tool_call_finished"]);
    assert.equal(await observed.late.promise, "lifetime_exceeded");
  });
});

Deno.test("extension: output validation, unknown tools and a wrong token are error outcomes", async () => {
  await withExtension(async (brainSession) => {
    const sloppyEnd = (await brainSession.call("sloppy", {}, { deadline: soon() })).outcome;
    assert.equal(sloppyEnd.status === "error" && sloppyEnd.error.code, "invalid_output");
    const absentEnd = (await brainSession.call("absent", {}, { deadline: soon() })).outcome;
    assert.equal(absentEnd.status === "error" && absentEnd.error.code, "unknown_tool");
    const badInput = (await brainSession.call("lookup", { id: 7 }, { deadline: soon() })).outcome;
    assert.equal(badInput.status === "error" && badInput.error.code, "invalid_input");
  });
  await withExtension(async (brainSession) => {
    const end = (await brainSession.call("sloppy", {}, { deadline: soon() })).outcome;
    assert.equal(end.status === "error" && end.error.code, "unauthorized");
  }, { brainToken: "wrong" });
});

Deno.test("extension: a response that ends without a finish leaves the call unknown", async () => {
  const broken = new Hono();
  broken.post(
    "/calls",
    () => new Response(JSON.stringify({ type: "result", id: 1, outcome: { status: "ok", value: "partial" } }) + "\n"),
  );
  broken.post("/calls/acks", (c) => c.body(null, 204));
  await using server = serve(broken.fetch);
  await using brain = new Brain({ allow: { net: [server.host] } });
  const env = extensionEnv({ name: "gone", url: server.url });
  const brainSession = await brain.sessions.create({ tools: [absent({ env })] });
  const end = await brainSession.call("absent", {}, { deadline: soon() });
  assert.equal(end.cause, "unknown");
  assert.equal(end.outcome.status, "unknown");
  const kinds = (await brainSession.read()).map((record) => record.kind);
  assert.deepEqual(kinds, ["tool_call_started", "tool_result", "tool_result", "tool_call_finished"]);
});

Deno.test("extension: a known protocol failure is an error outcome, not unknown", async () => {
  const broken = new Hono();
  broken.post("/calls", (c) => c.text("upstream exploded", 502));
  await using server = serve(broken.fetch);
  await using brain = new Brain({ allow: { net: [server.host] } });
  const env = extensionEnv({ name: "broken", url: server.url });
  const brainSession = await brain.sessions.create({ tools: [absent({ env })] });
  const end = await brainSession.call("absent", {}, { deadline: soon() });
  assert.equal(end.cause, "error");
  assert.equal(end.outcome.status === "error" && end.outcome.error.code, "protocol_error");
});

Deno.test("extension: an extension outside the allow-list fails session creation", async () => {
  await using brain = new Brain({ allow: { net: ["127.0.0.1:1"] } });
  const env = extensionEnv({ name: "far", url: "http://127.0.0.1:2/brain" });
  await assert.rejects(
    brain.sessions.create({ tools: [absent({ env })] }),
    (error) => codeOf(error) === "permission_denied",
  );
});

Deno.test("extension: an ack or ended notice that is not one for an open call is 404 call_finished, whatever its JSON", async () => {
  const extension = toolExtension({ tools: [absent()] });
  for (const body of ["5", '"x"', "[]", "null", '{"sessionId":"s","call":1,"ended":"cancelled"}', '{"ended":7}']) {
    const answer = await extension.fetch(
      new Request("http://extension.test/calls/acks", { method: "POST", body }),
    );
    assert.equal(answer.status, 404, body);
    assert.equal((await answer.json()).error.code, "call_finished", body);
  }
});
