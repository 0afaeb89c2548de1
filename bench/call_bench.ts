import { z } from "zod";
import { Brain, tool } from "../mod.ts";

const input = z.object({ a: z.number(), b: z.number() });
const add = tool({ name: "add", description: "Add.", input, run: ({ a, b }, ctx) => ctx.finish(a + b) });

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

Deno.bench("parse input and call the function directly", { group: "tool call", baseline: true }, async () => {
  const { a, b } = await input.parseAsync({ a: 1, b: 2 });
  await Promise.resolve(a + b);
});

Deno.bench("journaled call on an embedded Brain (memory journal)", { group: "tool call" }, async () => {
  await session.call("add", { a: 1, b: 2 });
});

Deno.bench("journaled call with three awaited emits", { group: "tool call" }, async () => {
  await eventful.call("emitting", { a: 1, b: 2 });
});
