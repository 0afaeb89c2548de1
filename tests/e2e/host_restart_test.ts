import assert from "node:assert/strict";
import { Brain, type BrainError } from "../../mod.ts";
import { scratchDir } from "../_support/scratch.ts";
import { SERVER_TOKEN, serverProcess } from "../_support/server_process.ts";
import { chatServer, completion } from "../model/chat_server.ts";
import { heldCall } from "./fixtures/held_call.ts";

const dir = scratchDir("host_restart");

/** `deno task serve` over the KV file at `path` on `port`, with a 1 s lease. */
function serve(path: string, port: string, env: Record<string, string> = {}) {
  return serverProcess(["--port", port, "--path", path, "--lease-ms", "1000"], { env });
}

Deno.test("a Brain server killed and restarted over its KV file: the lost call is unknown, the host reattaches by itself and its token still binds", async () => {
  const path = `${dir}/brain.kv`;
  // Servers go last: the Brain closes while the server it talks to still runs.
  await using servers = new AsyncDisposableStack();
  const first = servers.use(await serve(path, "0"));
  const url = first.url;
  const held = heldCall();
  await using brain = new Brain({ url, serverToken: SERVER_TOKEN, token: "restart-token", host: "app" });
  const session = await brain.sessions.create({ tools: held.tools });
  const call = await session.start("hold", {});
  await held.started;
  await first.kill("SIGKILL");
  assert.equal((await held.stopped as BrainError).code, "connection_lost");

  const second = servers.use(await serve(path, new URL(url).port));
  assert.equal(second.url, url);
  const end = await call.ended;
  assert.deepEqual([end.cause, end.outcome.status], ["unknown", "unknown"]);
  assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
  assert.deepEqual(held.invocations, [call.sequence], "the lost call was never dispatched again");

  const intruder = await fetch(`${url}/v1/host?host=app`, {
    headers: { authorization: "Bearer another-token", upgrade: "websocket" },
  });
  await intruder.body?.cancel();
  assert.equal(intruder.status, 401, "the restarted server still knows the host's token hash");
});

Deno.test("a restarted Brain server over its KV file resumes a remote conversation: the host re-declares the model by name", async () => {
  const path = `${dir}/conversation.kv`;
  await using chat = chatServer([
    { reply: completion({ content: "Hello, Ada." }) },
    { reply: completion({ content: "You are Ada." }) },
  ]);
  const env = { BRAIN_MODEL_URL: chat.baseUrl, BRAIN_MODEL: "restart-model" };
  await using servers = new AsyncDisposableStack();
  const first = servers.use(await serve(path, "0", env));
  const url = first.url;
  await using brain = new Brain({ url, serverToken: SERVER_TOKEN, token: "conversation-token", host: "talker" });
  const session = await brain.sessions.create({ model: "default", agentloop: { system: "Remember names." } });
  assert.equal((await session.send("I am Ada.")).content, "Hello, Ada.");
  await first.kill("SIGKILL");

  const second = servers.use(await serve(path, new URL(url).port, env));
  assert.equal(second.url, url);
  // An idempotent read is resent after the reconnect, so its answer means the handles are declared again.
  await session.read();
  assert.equal((await session.send("Who am I?")).content, "You are Ada.");
  assert.deepEqual(chat.seen[1].body.messages, [
    { role: "system", content: "Remember names." },
    { role: "user", content: "I am Ada." },
    { role: "assistant", content: "Hello, Ada." },
    { role: "user", content: "Who am I?" },
  ], "the loop rebuilt its conversation from the journal, with the same options");
});
