/**
 * The host connection: a Brain server and an application that hosts its Tools
 * over one WebSocket. Run the server with `deno task serve` and point
 * `BRAIN_URL` at it, or run this file alone to start one in this process:
 * `deno run --allow-net=127.0.0.1 --allow-env=BRAIN_URL,BRAIN_HOST_TOKEN examples/remote.ts`.
 */
import { Brain, type CallEnd, serveBrain, tool } from "../mod.ts";
import { z } from "zod";

/** A Tool that runs in this application's process, whichever Brain calls it. */
export const greet = tool({
  name: "greet",
  description: "Greet someone.",
  input: z.object({ name: z.string() }),
  run: async ({ name }, ctx) => {
    await ctx.emit("greeting", { name });
    return ctx.finish(`hello ${name}`);
  },
});

/** Connects as host `app`, creates a session with `greet` and calls it once. */
export async function main(url?: string, token: string = crypto.randomUUID()): Promise<CallEnd> {
  const server = url === undefined ? await serveBrain({ hostTokens: { app: token } }) : undefined;
  const brain = new Brain({ url: url ?? server!.url, token, host: "app" });
  try {
    const session = await brain.sessions.create({ tools: [greet()] });
    return await session.call("greet", { name: "Ada" }, { deadline: Date.now() + 5_000 });
  } finally {
    await brain.close();
    await server?.shutdown();
  }
}

if (import.meta.main) {
  console.log(await main(Deno.env.get("BRAIN_URL"), Deno.env.get("BRAIN_HOST_TOKEN")));
}
