import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainError, tool } from "../../mod.ts";
import { scratchDir } from "../scratch.ts";
import { chatServer, completion } from "../model/chat_server.ts";
import { spawnDeno } from "./child.ts";

const dir = scratchDir("host_restart");

function serve(path: string, port: string, env: Record<string, string> = {}) {
  return spawnDeno("src/host/server/serve.ts", ["--port", port, "--path", path, "--lease-ms", "1000"], [
    "--allow-net=127.0.0.1",
    "--allow-env=BRAIN_PORT,BRAIN_PATH,BRAIN_MODEL_URL,BRAIN_MODEL,BRAIN_MODEL_KEY,BRAIN_SERVER_TOKEN,BRAIN_HOST_TOKENS,BRAIN_LEASE_MS,BRAIN_JOURNAL,PG*",
    "--allow-read=.tmp",
    "--allow-write=.tmp",
  ], { BRAIN_SERVER_TOKEN: "operator-secret", ...env });
}

async function listening(server: ReturnType<typeof serve>): Promise<string> {
  const url = /^Brain listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(await server.line() ?? "")?.[1];
  assert.ok(url, "the server printed its URL");
  return url;
}

Deno.test("a Brain server killed and restarted over its KV file: the lost call is unknown, the host reattaches by itself and its token still binds", async () => {
  const path = `${dir}/brain.kv`;
  let server = serve(path, "0");
  const url = await listening(server);
  const brain = new Brain({ url, serverToken: "operator-secret", token: "restart-token", host: "app" });
  const invocations: number[] = [];
  const started = Promise.withResolvers<void>();
  const stopped = Promise.withResolvers<unknown>();
  const hold = tool({
    name: "hold",
    description: "Holds until its signal aborts.",
    input: z.object({}),
    run: async (_input, ctx) => {
      invocations.push(ctx.sequence);
      started.resolve();
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      stopped.resolve(ctx.signal.reason);
    },
  });
  const quick = tool({
    name: "quick",
    description: "Finishes at once.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish("quick"),
  });
  try {
    const session = await brain.sessions.create({ tools: [hold(), quick()] });
    const call = await session.start("hold", {});
    await started.promise;
    server.process.kill("SIGKILL");
    await server.process.status;
    assert.equal((await stopped.promise as BrainError).code, "connection_lost");

    server = serve(path, new URL(url).port);
    assert.equal(await listening(server), url);
    const end = await call.ended;
    assert.deepEqual([end.cause, end.outcome.status], ["unknown", "unknown"]);
    assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
    assert.deepEqual(invocations, [call.sequence], "the lost call was never dispatched again");

    const intruder = await fetch(`${url}/v1/host?host=app`, {
      headers: { authorization: "Bearer another-token", upgrade: "websocket" },
    });
    await intruder.body?.cancel();
    assert.equal(intruder.status, 401, "the restarted server still knows the host's token hash");
  } finally {
    await brain.close();
    server.process.kill("SIGTERM");
    await server.process.status;
  }
});

Deno.test("a restarted Brain server over its KV file resumes a remote conversation: the host re-declares the model by name", async () => {
  const path = `${dir}/conversation.kv`;
  await using chat = chatServer([
    { reply: completion({ content: "Hello, Ada." }) },
    { reply: completion({ content: "You are Ada." }) },
  ]);
  const env = { BRAIN_MODEL_URL: chat.baseUrl, BRAIN_MODEL: "restart-model" };
  let server = serve(path, "0", env);
  const url = await listening(server);
  const brain = new Brain({ url, serverToken: "operator-secret", token: "conversation-token", host: "talker" });
  try {
    const session = await brain.sessions.create({ model: "default", agentloop: { system: "Remember names." } });
    assert.equal((await session.send("I am Ada.")).content, "Hello, Ada.");
    server.process.kill("SIGKILL");
    await server.process.status;

    server = serve(path, new URL(url).port, env);
    assert.equal(await listening(server), url);
    // An idempotent read is resent after the reconnect, so its answer means the handles are declared again.
    await session.read();
    assert.equal((await session.send("Who am I?")).content, "You are Ada.");
    assert.deepEqual(chat.seen[1].body.messages, [
      { role: "system", content: "Remember names." },
      { role: "user", content: "I am Ada." },
      { role: "assistant", content: "Hello, Ada." },
      { role: "user", content: "Who am I?" },
    ], "the loop rebuilt its conversation from the journal, with the same options");
  } finally {
    await brain.close();
    server.process.kill("SIGTERM");
    await server.process.status;
  }
});
