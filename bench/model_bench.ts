/**
 * What journaling a model call costs: a provider answer alone (baseline) against
 * the same answer through `ctx.model` (request check, budget, two commits), and
 * over HTTP against a local chat-completions server.
 */
import { z } from "zod";
import { Brain, type BrainSession, type ModelProvider, openAICompatible, tool } from "../mod.ts";
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

const server = chatServer(Array.from({ length: 100_000 }, () => ({ reply: completion({ content: "summary" }) })));
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
  "new session, session.send answered in one turn (5 ms wake window)",
  { group: "agentloop turn" },
  async () => {
    const fresh = await session(instant);
    await fresh.send("hi");
    await fresh.end();
  },
);
