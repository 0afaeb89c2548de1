import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, brainEnv, type BrainError, hostEnv, type SetupContext, tool } from "../../mod.ts";
import { inspectTool, readerBrain } from "../_support/components.ts";
import { soon } from "../_support/deadline.ts";

function tracked(name: string, order: string[], failures = 0) {
  let runs = 0;
  const step = (ctx: SetupContext) => {
    runs++;
    order.push(`setup ${ctx.name} ${runs}`);
    if (runs <= failures) throw new Error(`install failed (${runs})`);
  };
  return { env: hostEnv({ name, setup: step, control: ["setup"] }), runs: () => runs };
}

const work = (order: string[]) =>
  tool({
    name: "work",
    description: "Record that it ran.",
    input: z.object({ setup: z.boolean().default(false) }),
    run: async ({ setup }, ctx) => {
      if (setup) {
        try {
          await ctx.environments.setup("deps");
        } catch (error) {
          return ctx.finish({ setup: (error as BrainError).code });
        }
      }
      order.push("run");
      return ctx.finish({ ran: true });
    },
  });

Deno.test("an Environment's setup runs once per session, before the first call's Tool code", async () => {
  const order: string[] = [];
  const deps = tracked("deps", order);
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [work(order)({ env: deps.env })] });
  assert.deepEqual(order, [], "setup waits for the first call");
  await session.call("work", {}, { deadline: soon() });
  await session.call("work", {}, { deadline: soon() });
  assert.deepEqual(order, ["setup deps 1", "run", "run"]);
  const other = await brain.sessions.create({ tools: [work(order)({ env: deps.env })] });
  await other.call("work", {}, { deadline: soon() });
  assert.equal(deps.runs(), 2, "each session prepares its own binding");
});

Deno.test("a failing setup is an ordinary setup_failed error for every call, never retried automatically", async () => {
  const order: string[] = [];
  const deps = tracked("deps", order, 1);
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [work(order)({ env: deps.env })] });
  for (let attempt = 0; attempt < 2; attempt++) {
    const end = await session.call("work", {}, { deadline: soon() });
    assert.equal(end.cause, "error");
    assert.equal(end.outcome.status === "error" && end.outcome.error.code, "setup_failed");
    assert.match(end.outcome.status === "error" ? end.outcome.error.message : "", /install failed \(1\)/);
  }
  assert.deepEqual(order, ["setup deps 1"], "the Tool never ran and setup ran once");
  const records = await session.read();
  assert.deepEqual(records.filter((r) => r.kind === "tool_call_finished").length, 2);
});

Deno.test("ctx.environments.setup reruns setup explicitly and reports its failure to the caller", async () => {
  const order: string[] = [];
  const deps = tracked("deps", order, 1);
  await using brain = new Brain();
  const healthy = hostEnv({ name: "ops", control: ["setup"] });
  const session = await brain.sessions.create({
    tools: [work(order)({ env: healthy }), tool({ ...probeSpec, name: "needs" })({ env: deps.env })],
  });
  const failed = await session.call("work", { setup: true }, { deadline: soon() });
  assert.deepEqual(failed.outcome, { status: "ok", value: { setup: "setup_failed" } });
  const retried = await session.call("work", { setup: true }, { deadline: soon() });
  assert.deepEqual(retried.outcome, { status: "ok", value: { ran: true } });
  assert.equal(deps.runs(), 2);
  const needs = await session.call("needs", {}, { deadline: soon() });
  assert.deepEqual(needs.outcome, { status: "ok", value: "ready" }, "the explicit success is reused");
  assert.equal(deps.runs(), 2);
});

const probeSpec = {
  name: "probe",
  description: "Finish ready.",
  input: z.object({}),
  run: (_: unknown, ctx: { finish(value: string): Promise<unknown> }) => ctx.finish("ready"),
};

Deno.test("a Brain Environment's setup finishes before a Component's entrypoint runs", async () => {
  await using brain = readerBrain();
  const prepared = brainEnv({
    name: "reader",
    filesystem: { workspace: "read" },
    setup: async ({ workspace }) => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      await Deno.mkdir(`${workspace}/vendor/lib`, { recursive: true });
    },
  });
  const session = await brain.sessions.create({ tools: [inspectTool()({ env: prepared, depth: 2 })] });
  const end = await session.call("inspect", { path: "." }, { deadline: soon() });
  assert.deepEqual(end.outcome.status === "ok" && end.outcome.value, {
    eventSequence: 2,
    entries: ["vendor/", "vendor/lib/"],
  });
});
