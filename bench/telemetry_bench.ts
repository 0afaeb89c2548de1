/**
 * What tracing costs a journaled call: with no tracer provider registered
 * (the baseline: Brain makes no span at all), and with one registered whose
 * spans are recorded and dropped; and the hooks' whole cost without a tracer:
 * the one check such a call makes when it starts (its emit, dispatch and end
 * then only test that the call has no span). Run with `deno task bench`.
 */
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { z } from "zod";
import { Brain, tool } from "../mod.ts";
import { brainTracer } from "../src/telemetry/tracer.ts";

const add = tool({
  name: "add",
  description: "Add.",
  input: z.object({ a: z.number(), b: z.number() }),
  run: async ({ a, b }, ctx) => {
    await ctx.emit("step", null);
    return ctx.finish(a + b);
  },
});
const brain = new Brain();
const session = await brain.sessions.create({ tools: [add()] });
const provider = new BasicTracerProvider();

Deno.bench("journaled call with an emit, no tracer registered", { group: "tracing", baseline: true }, async () => {
  await session.call("add", { a: 1, b: 2 });
});

Deno.bench("journaled call with an emit, a tracer registered", { group: "tracing" }, async (b) => {
  trace.setGlobalTracerProvider(provider);
  b.start();
  await session.call("add", { a: 1, b: 2 });
  b.end();
  trace.disable();
});

Deno.bench("the no-tracer check one such call makes", { group: "tracing" }, () => {
  brainTracer();
});
