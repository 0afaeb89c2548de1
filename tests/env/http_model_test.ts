import assert from "node:assert/strict";
import { Hono } from "hono";
import { z } from "zod";
import { Brain, httpEnv, tool } from "../../mod.ts";
import { ScriptedProvider, type ScriptStep } from "../../src/model/testing.ts";
import { ofKind } from "../_support/until.ts";
import { serve } from "../_support/serve.ts";
import { soon } from "../_support/deadline.ts";

interface Access {
  url: string | undefined;
  token: string | undefined;
}

/** A stand-in HTTP Environment endpoint that summarizes through the model execution service it was handed. */
function summarizer(seen: Access[]) {
  const app = new Hono();
  app.post("/summarize", async (c) => {
    const { text } = await c.req.json();
    const access = { url: c.req.header("brain-model-url"), token: c.req.header("brain-model-token") };
    seen.push(access);
    if (!access.url) return c.json({ summary: null, status: 0, error: "no model granted" });
    const answer = await fetch(access.url, {
      method: "POST",
      headers: { authorization: `Bearer ${access.token}`, "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: `Summarize: ${text}` }] }),
    });
    const body = await answer.json();
    return c.json({ summary: body.content ?? null, status: answer.status, error: body.error?.code ?? null });
  });
  return app;
}

const summarize = tool({
  name: "summarize",
  description: "Summarize a text remotely.",
  input: z.object({ text: z.string() }),
  output: z.object({ summary: z.string().nullable(), status: z.number(), error: z.string().nullable() }),
  implementation: () => ({ type: "http_json", method: "POST", path: "/summarize" }),
});

async function withSummarizer(
  { model, steps, maxModelCalls }: { model?: boolean; steps: ScriptStep[]; maxModelCalls?: number },
  run: (context: {
    session: Awaited<ReturnType<Brain["sessions"]["create"]>>;
    seen: Access[];
    provider: ScriptedProvider;
  }) => Promise<void>,
) {
  const seen: Access[] = [];
  await using server = serve(summarizer(seen).fetch);
  await using brain = new Brain({ allow: { net: [server.host] }, maxModelCalls });
  const provider = new ScriptedProvider(steps);
  const env = httpEnv({ name: "remote", baseUrl: server.url, model });
  const session = await brain.sessions.create({
    tools: [summarize({ env })],
    model: { provider, model: "fixed-model", credentials: { apiKey: "secret" } },
  });
  await run({ session, seen, provider });
}

Deno.test("an HTTP Environment granted model calls the session's model through the service, journaled like ctx.model", async () => {
  await withSummarizer({ model: true, steps: ["short"] }, async ({ session, seen, provider }) => {
    const end = await session.call("summarize", { text: "a long text" }, { deadline: soon() });
    assert.deepEqual(end.outcome, { status: "ok", value: { summary: "short", status: 200, error: null } });
    assert.equal(provider.calls.length, 1);
    assert.equal(provider.calls[0].model, "fixed-model");
    assert.deepEqual(provider.calls[0].credentials, { apiKey: "secret" });
    assert.deepEqual(provider.calls[0].request, {
      messages: [{ role: "user", content: "Summarize: a long text" }],
      system: "",
      tools: [],
    });
    const records = await session.read();
    const [started] = ofKind(records, "tool_call_started");
    const [modelStarted] = ofKind(records, "model_call_started");
    const [modelFinished] = ofKind(records, "model_call_finished");
    const [result] = ofKind(records, "tool_result");
    assert.deepEqual(modelStarted.origin, { kind: "tool", tool: "summarize", call: started.sequence });
    assert.equal(modelStarted.activation, started.activation, "the request is charged to the call's activation");
    assert.equal(modelFinished.call, modelStarted.sequence);
    assert.equal(modelFinished.outcome.status, "ok");
    assert.ok(modelFinished.usage!.outputTokens > 0, "usage is journaled");
    assert.ok(modelFinished.sequence < result.sequence, "the model call is journaled before the Tool's result");
    assert.equal(JSON.stringify(records).includes("secret"), false, "credentials are never journaled");
    assert.equal(JSON.stringify(records).includes(seen[0].token!), false, "the per-call token is never journaled");

    const again = await fetch(seen[0].url!, {
      method: "POST",
      headers: { authorization: `Bearer ${seen[0].token}` },
      body: JSON.stringify({ messages: [{ role: "user", content: "one more" }] }),
    });
    assert.equal(again.status, 401, "the token stops working when its call ends");
    assert.equal((await again.json()).error.code, "unauthorized");
    assert.equal(provider.calls.length, 1);
  });
});

Deno.test("each call gets its own model token, and a made-up one is refused", async () => {
  await withSummarizer({ model: true, steps: ["one", "two"] }, async ({ session, seen, provider }) => {
    await session.call("summarize", { text: "a" }, { deadline: soon() });
    await session.call("summarize", { text: "b" }, { deadline: soon() });
    assert.notEqual(seen[0].token, seen[1].token);
    const forged = await fetch(seen[1].url!, {
      method: "POST",
      headers: { authorization: "Bearer forged" },
      body: JSON.stringify({ messages: [{ role: "user", content: "x" }] }),
    });
    assert.equal(forged.status, 401);
    await forged.body?.cancel();
    assert.equal(provider.calls.length, 2);
  });
});

Deno.test("an HTTP Environment without the model grant gets no model execution service", async () => {
  await withSummarizer({ steps: ["never used"] }, async ({ session, seen, provider }) => {
    const end = await session.call("summarize", { text: "a" }, { deadline: soon() });
    assert.deepEqual(end.outcome, { status: "ok", value: { summary: null, status: 0, error: "no model granted" } });
    assert.deepEqual(seen, [{ url: undefined, token: undefined }]);
    assert.equal(provider.calls.length, 0);
  });
});

Deno.test("model requests through the service share the calling activation's model-call budget", async () => {
  await withSummarizer({ model: true, steps: ["only"], maxModelCalls: 1 }, async ({ session, provider }) => {
    const activation = session.activation();
    const first = await session.call("summarize", { text: "a" }, { deadline: soon(), activation });
    assert.equal(first.outcome.status === "ok" && (first.outcome.value as { summary: string }).summary, "only");
    const second = await session.call("summarize", { text: "b" }, { deadline: soon(), activation });
    assert.deepEqual(second.outcome, {
      status: "ok",
      value: { summary: null, status: 429, error: "budget_exceeded" },
    });
    assert.equal(provider.calls.length, 1);
  });
});

Deno.test("the Tool's deadline stops a pending service request, which ends unknown and is never replayed", async () => {
  const hang: ScriptStep = (call) =>
    new Promise<never>((_, reject) => call.signal.addEventListener("abort", () => reject(call.signal.reason)));
  await withSummarizer({ model: true, steps: [hang] }, async ({ session, provider }) => {
    const end = await session.call("summarize", { text: "a" }, { deadline: Date.now() + 300 });
    assert.equal(end.cause, "timeout");
    const records = await session.read();
    const [modelFinished] = ofKind(records, "model_call_finished");
    assert.equal(modelFinished.outcome.status, "unknown");
    assert.equal(provider.calls.length, 1);
  });
});

Deno.test("the model grant is part of the binding's description, and must be a boolean", () => {
  const baseUrl = "http://127.0.0.1:1";
  assert.equal((httpEnv({ name: "a", baseUrl, model: true }).describe() as { model?: boolean }).model, true);
  assert.equal("model" in (httpEnv({ name: "a", baseUrl }).describe() as object), false);
  assert.throws(() => httpEnv({ name: "a", baseUrl, model: "yes" as never }), { code: "invalid_argument" });
});

Deno.test("an open call's model token with its secret changed or cut off is refused, the real one works", async () => {
  const statuses: number[] = [];
  const app = new Hono();
  app.post("/summarize", async (c) => {
    const url = c.req.header("brain-model-url")!;
    const token = c.req.header("brain-model-token")!;
    const grant = token.slice(0, token.indexOf("."));
    for (const tried of [`${grant}.${"0".repeat(token.length - grant.length - 1)}`, grant, `${grant}.`, token]) {
      const answer = await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${tried}` },
        body: JSON.stringify({ messages: [{ role: "user", content: "x" }] }),
      });
      statuses.push(answer.status);
      await answer.body?.cancel();
    }
    return c.json({ summary: "done", status: 0, error: null });
  });
  await using server = serve(app.fetch);
  await using brain = new Brain({ allow: { net: [server.host] } });
  const provider = new ScriptedProvider(["answered"]);
  const env = httpEnv({ name: "remote", baseUrl: server.url, model: true });
  const session = await brain.sessions.create({
    tools: [summarize({ env })],
    model: { provider, model: "fixed-model", credentials: { apiKey: "secret" } },
  });
  const end = await session.call("summarize", { text: "a" }, { deadline: soon() });
  assert.equal(end.outcome.status, "ok");
  assert.deepEqual(statuses, [401, 401, 401, 200]);
  assert.equal(provider.calls.length, 1);
});
