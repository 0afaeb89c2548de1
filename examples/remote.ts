/**
 * The host connection: a Brain server and an application that hosts its Tools
 * over one WebSocket. Run this file alone to start a server in this process:
 * `deno run --allow-net=127.0.0.1 --allow-env=BRAIN_URL,BRAIN_HOST_TOKEN,BRAIN_SERVER_TOKEN examples/remote.ts`.
 * Or run one with `BRAIN_SERVER_TOKEN=secret deno task serve` and run this file
 * with `BRAIN_URL=http://127.0.0.1:8787`, the same `BRAIN_SERVER_TOKEN` (it
 * registers host `app` on its first connection) and `BRAIN_HOST_TOKEN` (the
 * token host `app` keeps from then on).
 */
import { Brain, type CallEnd, tool } from "../mod.ts";
import { serveBrain } from "../src/host/server/server.ts";
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

/**
 * Connects as host `app`, creates a session with `greet` and calls it once: on the server at `url` (registering
 * `app` with the operator's `serverToken` if it is new there), or else on one started in this process.
 */
export async function main(url?: string, token: string = crypto.randomUUID(), serverToken?: string): Promise<CallEnd> {
  const server = url === undefined ? await serveBrain({ hostTokens: { app: token } }) : undefined;
  const brain = new Brain({ url: url ?? server!.url, token, host: "app", ...(serverToken ? { serverToken } : {}) });
  try {
    const session = await brain.sessions.create({ tools: [greet()] });
    return await session.call("greet", { name: "Ada" }, { deadline: Date.now() + 5_000 });
  } finally {
    await brain.close();
    await server?.shutdown();
  }
}

if (import.meta.main) {
  console.log(
    await main(Deno.env.get("BRAIN_URL"), Deno.env.get("BRAIN_HOST_TOKEN"), Deno.env.get("BRAIN_SERVER_TOKEN")),
  );
}
