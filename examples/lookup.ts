/**
 * The spec's first example: an application function Tool that reads the app's
 * own in-memory database. Run it with `deno run examples/lookup.ts`.
 */
import { Brain, formatRecord, tool } from "../mod.ts";
import type { JournalRecord } from "../src/journal/records.ts";
import { z } from "zod";

/** The application's state: `get(key)` returns `{ value }` or null. */
export const database = {
  rows: new Map([["customer:7", { value: "Ada Lovelace" }], ["customer:9", { value: "Grace Hopper" }]]),
  get(key: string): Promise<{ value: string } | null> {
    return Promise.resolve(this.rows.get(key) ?? null);
  },
};

/** The lookup Tool, exactly as the spec declares it. */
export const lookup = tool({
  name: "lookup",
  description: "Look up one record.",
  input: z.object({ id: z.string() }),
  output: z.object({ value: z.string() }).nullable(),
  options: z.object({ prefix: z.string() }),
  run: async ({ id }, ctx) => {
    await ctx.emit("lookup_started", { id });
    return ctx.finish(await database.get(`${ctx.options.prefix}${id}`) ?? null);
  },
});

/** Looks up a present and a missing customer and returns the session's journal. */
export async function main(): Promise<JournalRecord[]> {
  const brain = new Brain();
  try {
    const session = await brain.sessions.create({ tools: [lookup({ prefix: "customer:" })] });
    await session.call("lookup", { id: "7" }, { deadline: Date.now() + 5_000 });
    await session.call("lookup", { id: "8" }, { deadline: Date.now() + 5_000 });
    return await session.read();
  } finally {
    await brain.close();
  }
}

if (import.meta.main) {
  for (const record of await main()) console.log(formatRecord(record));
}
