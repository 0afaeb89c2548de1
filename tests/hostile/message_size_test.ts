import assert from "node:assert/strict";
import { Brain } from "../../mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { BRAIN_MAX_MESSAGE_BYTES } from "../../src/contract/budgets.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";

const OPERATOR = "operator-secret";
/** One byte over the limit, in characters of three UTF-8 bytes each but one. */
const OVER = "€".repeat(BRAIN_MAX_MESSAGE_BYTES / 3) + "ab";

const models = () => ({ default: { provider: new ScriptedProvider(["fine"]), model: "demo" } });

async function refusesOverlong(brain: Brain): Promise<void> {
  const session = await brain.sessions.create({ model: "default" });
  await assert.rejects(session.send(OVER), hasCode("payload_too_large"));
  assert.deepEqual((await session.read()).filter((record) => record.kind === "user_message"), []);
  // The session goes on: a message at the limit is answered.
  const reply = await session.send("€".repeat(BRAIN_MAX_MESSAGE_BYTES / 3 - 1) + "a");
  assert.equal(reply.content, "fine");
  await session.end();
}

Deno.test("a user message over BRAIN_MAX_MESSAGE_BYTES is payload_too_large and commits nothing, embedded and remote", async () => {
  await using embedded = new Brain({ models: models() });
  await refusesOverlong(embedded);
  await using server = await servedBrain({ serverToken: OPERATOR, pingIntervalMs: 60_000, models: models() });
  await using client = new Brain({ url: server.url, token: "messages-token", serverToken: OPERATOR, host: "app" });
  await refusesOverlong(client);
});
