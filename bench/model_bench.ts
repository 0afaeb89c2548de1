/**
 * What journaling a model call costs: a provider answer alone (baseline) against
 * the same answer through `ctx.model` (request check, budget, two commits), and
 * over HTTP against a local chat-completions server; and an HTTP Environment's
 * request that calls the model execution service against the same request making
 * no model call.
 */
import { z } from "zod";
import { Hono } from "hono";
import { Brain, type BrainSession, httpEnv, openAICompatible, tool } from "../mod.ts";
import type { ModelProvider } from "../src/model/types.ts";
import { normalizeModelRequest } from "../src/model/request.ts";
import { chatServer, completion } from "../tests/model/chat_server.ts";

const request = { messages: [{ role: "user" as const, content: "Summarize: the journal is the truth." }] };
/** A provider that answers at once, so the benches measure Brain, not a script. */
const instant: ModelProvider = {
  name: "instant",
  complete: ({ model }) => Promise.resolve({ content: "summary", toolCalls: [], stopReason: "stop", model }),
};

const ask = tool({
  name: "ask",
  description: "Asks the model once.",
  input: z.object({}),
  run: async (_input, ctx) => ctx.finish((await ctx.model(request)).content),
});

const brain = new Brain({ maxModelCalls: 1_000_000 });
function session(provider: ModelProvider): Promise<BrainSession> {
  return brain.sessions.create({ tools: [ask()], model: { provider, model: "m" } });
}

const normalized = normalizeModelRequest(request);
const signal = new AbortController().signal;
Deno.bench("provider.complete alone", { group: "model call", baseline: true }, async () => {
  await instant.complete({ model: "m", request: normalized, credentials: {}, signal });
});

const journaled = await session(instant);
Deno.bench("ctx.model in a journaled Tool call", { group: "model call" }, async () => {
  await journaled.call("ask", {});
});

// One reply object for every request: 100,000 distinct ones would make each garbage collection of the other benches
// mark them all, which measures the fixture, not Brain.
const reply = { reply: completion({ content: "summary" }) };
const server = chatServer(Array.from({ length: 100_000 }, () => reply));
const http = openAICompatible({ baseUrl: server.baseUrl });
Deno.bench("provider.complete, HTTP to 127.0.0.1", { group: "model call over HTTP", baseline: true }, async () => {
  await http.complete({ model: "m", request: normalized, credentials: {}, signal });
});

const overHttp = await session(openAICompatible({ baseUrl: server.baseUrl }));
Deno.bench("ctx.model in a Tool call, HTTP to 127.0.0.1", { group: "model call over HTTP" }, async () => {
  await overHttp.call("ask", {});
});

Deno.bench("new session, one Tool call with ctx.model", { group: "agentloop turn", baseline: true }, async () => {
  const fresh = await session(instant);
  await fresh.call("ask", {});
  await fresh.end();
});

Deno.bench(
  "new session, session.send answered in one turn",
  { group: "agentloop turn" },
  async () => {
    const fresh = await session(instant);
    await fresh.send("hi");
    await fresh.end();
  },
);

const remote = new Hono();
remote.post("/plain", (c) => c.json("summary"));
remote.post("/summarize", async (c) => {
  const answer = await fetch(c.req.header("brain-model-url")!, {
    method: "POST",
    headers: { authorization: `Bearer ${c.req.header("brain-model-token")}` },
    body: JSON.stringify(request),
  });
  return c.json((await answer.json()).content);
});
const remoteServer = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, remote.fetch);
const posting = (name: string, path: string) =>
  tool({
    name,
    description: `POST ${path}.`,
    input: z.object({}),
    implementation: () => ({ type: "http_json", method: "POST", path }),
  });
const serviceBrain = new Brain({ allow: { net: ["127.0.0.1"] }, maxModelCalls: 1_000_000 });
const granted = httpEnv({ name: "remote", baseUrl: `http://127.0.0.1:${remoteServer.addr.port}`, model: true });
const serviceSession = await serviceBrain.sessions.create({
  tools: [posting("plain", "/plain")({ env: granted }), posting("summarize", "/summarize")({ env: granted })],
  model: { provider: instant, model: "m" },
});
Deno.bench("HTTP Environment call, no model call", { group: "model execution service", baseline: true }, async () => {
  await serviceSession.call("plain", {});
});
Deno.bench("HTTP Environment call that calls the model service", { group: "model execution service" }, async () => {
  await serviceSession.call("summarize", {});
});
