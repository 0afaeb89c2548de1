/**
 * What journaling costs one Tool call: a bare zod call (parseAsync in, call,
 * parseAsync out, the baseline), the same call through the Vercel AI SDK's
 * `tool()` + `execute`, and journaled calls on an embedded Brain over the
 * memory journal. Run with `deno task bench`.
 */
import { z } from "zod";
import { tool as aiTool } from "ai";
import { Brain, tool } from "../mod.ts";

const input = z.object({ a: z.number(), b: z.number() });
const output = z.number();
const add = tool({ name: "add", description: "Add.", input, output, run: ({ a, b }, ctx) => ctx.finish(a + b) });

const brain = new Brain();
const session = await brain.sessions.create({ tools: [add()] });
const emitting = tool({
  name: "emitting",
  description: "Emit three events, then finish.",
  input,
  run: async ({ a, b }, ctx) => {
    for (let index = 0; index < 3; index++) await ctx.emit("step", index);
    return ctx.finish(a + b);
  },
});
const eventful = await brain.sessions.create({ tools: [emitting()] });
const emitOnce = tool({
  name: "emit_once",
  description: "Emit one event, then finish.",
  input,
  output,
  run: async ({ a, b }, ctx) => {
    await ctx.emit("step", 0);
    return ctx.finish(a + b);
  },
});
const emittingOnce = await brain.sessions.create({ tools: [emitOnce()] });
const aiAdd = aiTool({
  description: "Add.",
  inputSchema: input,
  outputSchema: output,
  execute: ({ a, b }: { a: number; b: number }) => Promise.resolve(a + b),
});
const options = { toolCallId: "call_1", messages: [] };

async function bareZodCall(): Promise<void> {
  const { a, b } = await input.parseAsync({ a: 1, b: 2 });
  await output.parseAsync(await Promise.resolve(a + b));
}

async function aiSdkCall(): Promise<void> {
  const parsed = await input.parseAsync({ a: 1, b: 2 });
  await output.parseAsync(await aiAdd.execute!(parsed, options));
}

Deno.bench("bare zod call: parseAsync in, call, parseAsync out", { group: "tool call", baseline: true }, bareZodCall);

Deno.bench("AI SDK tool(): parseAsync in, execute, parseAsync out", { group: "tool call" }, aiSdkCall);

Deno.bench("journaled call on an embedded Brain (memory journal): ctx.finish", { group: "tool call" }, async () => {
  await session.call("add", { a: 1, b: 2 });
});

Deno.bench("journaled call: one awaited ctx.emit, then ctx.finish", { group: "tool call" }, async () => {
  await emittingOnce.call("emit_once", { a: 1, b: 2 });
});

Deno.bench("journaled call with three awaited emits", { group: "tool call" }, async () => {
  await eventful.call("emitting", { a: 1, b: 2 });
});

// Scaling: a call costs the same whatever the session's journal length and however many sessions are open.
const short = await brain.sessions.create({ tools: [add()] });
const long = await brain.sessions.create({ tools: [add()] });
for (let index = 0; index < 10_000; index++) await long.call("add", { a: 1, b: 2 });
const crowded = new Brain();
const among = await crowded.sessions.create({ tools: [add()] });
for (let index = 0; index < 1_000; index++) await crowded.sessions.create({ tools: [add()] });

Deno.bench("call on a session with a short journal", { group: "call scaling", baseline: true }, async () => {
  await short.call("add", { a: 1, b: 2 });
});

Deno.bench("call on a session 10,000 calls longer", { group: "call scaling" }, async () => {
  await long.call("add", { a: 1, b: 2 });
});

Deno.bench("call on a Brain with 1,000 other open sessions", { group: "call scaling" }, async () => {
  await among.call("add", { a: 1, b: 2 });
});

// The baselines run first, right after the setup above: warmed here, they do not also pay for its collection and
// their first compilation, which made the bare zod call measure up to half again what the same work through the AI SDK does.
for (let index = 0; index < 20_000; index++) {
  await bareZodCall();
  await aiSdkCall();
}
