import { z } from "zod";
import { Brain, tool } from "../mod.ts";
import type { ModelProvider } from "../src/model/types.ts";
import { serveBrain } from "../src/host/server/server.ts";
import { EchoClient, serveEcho } from "./ws_echo.ts";

const noop = tool({
  name: "noop",
  description: "Finishes at once.",
  input: z.object({}),
  run: (_input, ctx) => ctx.finish(null),
});

const report = "r".repeat(2048);
const large = tool({
  name: "large",
  description: "Finishes at once with a 2 KiB string.",
  input: z.object({}),
  run: (_input, ctx) => ctx.finish(report),
});

/** A provider that answers at once, so the benches measure Brain and the socket, not a script. */
const instant: ModelProvider = {
  name: "instant",
  complete: ({ model }) => Promise.resolve({ content: "summary", toolCalls: [], stopReason: "stop", model }),
};
const ask = tool({
  name: "ask",
  description: "Asks the model once.",
  input: z.object({}),
  run: async (_input, ctx) => ctx.finish((await ctx.model({ messages: [{ role: "user", content: "hi" }] })).content),
});
const models = { default: { provider: instant, model: "m" } };
const maxModelCalls = 1_000_000;

const embedded = new Brain({ models, maxModelCalls });
const embeddedSession = await embedded.sessions.create({ tools: [noop(), ask(), large()], model: "default" });
const server = await serveBrain({ serverToken: "operator-secret", models, maxModelCalls });
const remote = new Brain({ url: server.url, serverToken: "operator-secret", token: "bench-token", host: "bench" });
const remoteSession = await remote.sessions.create({ tools: [noop(), ask(), large()], model: "default" });

/** A child process that prints the URL it listens on as its first line. */
async function listening(args: string[], env: Record<string, string> = {}) {
  const process = new Deno.Command(Deno.execPath(), { args, env, stdout: "piped", stderr: "inherit" }).spawn();
  const reader = process.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  reader.releaseLock();
  return { process, url: / listening on (\S+)/.exec(text)![1] };
}

/** The same server as `deno task serve` runs it, in its own process. */
const child = await listening(
  ["run", "--allow-net=127.0.0.1", "--allow-env", "src/host/server/serve.ts", "--port", "0"],
  { BRAIN_SERVER_TOKEN: "operator-secret" },
);
const childUrl = child.url;
const childClient = new Brain({ url: childUrl, serverToken: "operator-secret", token: "bench-token", host: "bench" });
const childSession = await childClient.sessions.create({ tools: [noop()] });

/** The floor under a remote call: its frames, echoed over the same transport with nothing behind them. */
const echo = serveEcho();
const echoClient = await EchoClient.open(echo.url);
const childEcho = await listening(["run", "--allow-net=127.0.0.1", "bench/ws_echo.ts"]);
const childEchoClient = await EchoClient.open(childEcho.url);

Deno.bench({ name: "embedded Tool call", group: "host round trip", baseline: true }, async () => {
  await embeddedSession.call("noop", {});
});

Deno.bench({ name: "WebSocket Tool call on loopback", group: "host round trip" }, async () => {
  await remoteSession.call("noop", {});
});

Deno.bench(
  { name: "embedded Tool call", group: "host round trip, server in a child process", baseline: true },
  async () => {
    await embeddedSession.call("noop", {});
  },
);

Deno.bench({
  name: "WebSocket Tool call to a server in a child process",
  group: "host round trip, server in a child process",
}, async () => {
  await childSession.call("noop", {});
});

Deno.bench(
  { name: "floor: a call's two round trips, echoed", group: "remote call over its floor", baseline: true },
  async () => {
    await echoClient.call();
  },
);

Deno.bench({ name: "WebSocket Tool call on loopback", group: "remote call over its floor" }, async () => {
  await remoteSession.call("noop", {});
});

Deno.bench({
  name: "floor: a call's two round trips, echoed by a child process",
  group: "remote call over its floor, server in a child process",
  baseline: true,
}, async () => {
  await childEchoClient.call();
});

Deno.bench({
  name: "WebSocket Tool call to a server in a child process",
  group: "remote call over its floor, server in a child process",
}, async () => {
  await childSession.call("noop", {});
});

const CONCURRENT = 64;
Deno.bench({ name: "64 concurrent embedded Tool calls", group: "64 concurrent calls", baseline: true }, async () => {
  await Promise.all(Array.from({ length: CONCURRENT }, () => embeddedSession.call("noop", {})));
});

Deno.bench({ name: "64 concurrent WebSocket Tool calls on loopback", group: "64 concurrent calls" }, async () => {
  await Promise.all(Array.from({ length: CONCURRENT }, () => remoteSession.call("noop", {})));
});

Deno.bench({
  name: "floor: 64 calls' two round trips, batched and echoed",
  group: "64 concurrent calls over their floor",
  baseline: true,
}, async () => {
  await echoClient.calls(CONCURRENT);
});

Deno.bench(
  { name: "64 concurrent WebSocket Tool calls on loopback", group: "64 concurrent calls over their floor" },
  async () => {
    await Promise.all(Array.from({ length: CONCURRENT }, () => remoteSession.call("noop", {})));
  },
);

/** Each call with its own deadline, 30 s away: the caller's and the server's timers for it. */
const withDeadline = () => ({ deadline: Date.now() + 30_000 });
Deno.bench({
  name: "64 concurrent embedded Tool calls with a deadline",
  group: "64 concurrent calls with a deadline",
  baseline: true,
}, async () => {
  await Promise.all(Array.from({ length: CONCURRENT }, () => embeddedSession.call("noop", {}, withDeadline())));
});

Deno.bench({
  name: "64 concurrent WebSocket Tool calls with a deadline on loopback",
  group: "64 concurrent calls with a deadline",
}, async () => {
  await Promise.all(Array.from({ length: CONCURRENT }, () => remoteSession.call("noop", {}, withDeadline())));
});

Deno.bench({ name: "embedded Tool call with ctx.model", group: "ctx.model round trip", baseline: true }, async () => {
  await embeddedSession.call("ask", {});
});

Deno.bench({ name: "WebSocket Tool call with ctx.model on the server", group: "ctx.model round trip" }, async () => {
  await remoteSession.call("ask", {});
});

// A report over 1 KiB: Deno's own WebSocket client would hold it ~45 ms for a delayed ACK.
Deno.bench({ name: "embedded Tool call with a 2 KiB result", group: "2 KiB result", baseline: true }, async () => {
  await embeddedSession.call("large", {});
});

Deno.bench({ name: "WebSocket Tool call with a 2 KiB result", group: "2 KiB result" }, async () => {
  await remoteSession.call("large", {});
});

globalThis.addEventListener("unload", () => {
  embedded.close();
  remote.close();
  server.shutdown();
  childClient.close();
  child.process.kill("SIGTERM");
  echoClient.close();
  childEchoClient.close();
  echo.shutdown();
  childEcho.process.kill("SIGTERM");
});
