import { z } from "zod";
import { Brain, serveBrain, tool } from "../mod.ts";

const noop = tool({
  name: "noop",
  description: "Finishes at once.",
  input: z.object({}),
  run: (_input, ctx) => ctx.finish(null),
});

const embedded = new Brain();
const embeddedSession = await embedded.sessions.create({ tools: [noop()] });
const server = await serveBrain();
const remote = new Brain({ url: server.url, token: "bench-token", host: "bench" });
const remoteSession = await remote.sessions.create({ tools: [noop()] });

Deno.bench({ name: "embedded Tool call", group: "host round trip", baseline: true }, async () => {
  await embeddedSession.call("noop", {});
});

Deno.bench({ name: "WebSocket Tool call on loopback", group: "host round trip" }, async () => {
  await remoteSession.call("noop", {});
});

globalThis.addEventListener("unload", () => {
  embedded.close();
  remote.close();
  server.shutdown();
});
