/**
 * The Tool outcomes example: every way a Tool can end, and what the journal keeps.
 * Run it with `deno run examples/outcomes.ts`.
 */
import { Brain, type CallEnd, fail, ok, tool } from "../mod.ts";
import { z } from "zod";

const input = z.object({ id: z.string() });

/** Publishes one result and finishes: the everyday synchronous Tool. */
export const finishes = tool({
  name: "finishes",
  description: "Finish with a value.",
  input,
  output: z.object({ id: z.string() }),
  run: ({ id }, ctx) => ctx.finish({ id }),
});

/** Fails with a structured error that keeps code, message, retryable and details. */
export const fails = tool({
  name: "fails",
  description: "Fail with a structured error.",
  input,
  run: ({ id }) => fail("not_found", `no record ${id}`, { retryable: false, details: { id } }),
});

/** Returns business data whose own `status` is reserved, wrapped in an explicit ok. */
export const reservedData = tool({
  name: "reserved_data",
  description: "Return data that has a status field.",
  input,
  run: ({ id }, ctx) => ctx.finish(ok({ id, status: "error" })),
});

/** Throws: the exception becomes tool_error. */
export const throws = tool({
  name: "throws",
  description: "Throw.",
  input,
  run: () => {
    throw new Error("database offline");
  },
});

/** Returns a result, stays open, and finishes later from background work. */
export const background = tool({
  name: "background",
  description: "Return now, finish later.",
  input,
  run: ({ id }, ctx) => {
    setTimeout(async () => {
      await ctx.emit("progress", { id, percent: 100 });
      await ctx.finish({ id, done: true }, { content: `record ${id} is ready` });
    }, 10);
    return { id, done: false };
  },
});

/** Never finishes: its deadline ends it with timeout. */
export const forgets = tool({
  name: "forgets",
  description: "Forget to finish.",
  input,
  run: () => {},
});

/** Runs every outcome Tool once and returns how each call ended. */
export async function main(): Promise<Record<string, CallEnd>> {
  const brain = new Brain();
  try {
    const tools = [finishes(), fails(), reservedData(), throws(), background(), forgets()];
    const session = await brain.sessions.create({ tools });
    const ends: Record<string, CallEnd> = {};
    for (const placed of tools) {
      ends[placed.tool.name] = await session.call(placed, { id: "7" }, { deadline: Date.now() + 200 });
    }
    return ends;
  } finally {
    await brain.close();
  }
}

if (import.meta.main) {
  for (const [name, end] of Object.entries(await main())) {
    console.log(`${name.padEnd(14)} ${end.cause.padEnd(8)} ${JSON.stringify(end.outcome)}`);
  }
}
