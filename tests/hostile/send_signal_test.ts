import assert from "node:assert/strict";
import { Brain, BrainError } from "../../mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { gate } from "../_support/gate.ts";
import { ofKind, until } from "../_support/until.ts";

const OPERATOR = "operator-secret";

/** A model whose first answer waits for `held`, then answers everything at once. */
const models = (held: Promise<unknown>) => ({
  default: {
    provider: new ScriptedProvider([async () => (await held, "late"), "second", "third"]),
    model: "demo",
  },
});

async function abortsWithCodes(brain: Brain, hold: { open(): void }): Promise<void> {
  const session = await brain.sessions.create({ model: "default" });
  // Already aborted, with whatever reason: cancelled, and the message is never committed (the model never asked).
  for (const signal of [AbortSignal.abort(), AbortSignal.abort("a string reason"), AbortSignal.abort(null)]) {
    await assert.rejects(session.send("never", { signal }), hasCode("cancelled"));
  }
  assert.deepEqual(ofKind(await session.read(), "user_message"), []);
  // Aborted while waiting with the default reason (a DOMException): cancelled, the reason its cause; the loop answers.
  const controller = new AbortController();
  const waiting = session.send("hi", { signal: controller.signal });
  await until(session, (seen) => ofKind(seen, "model_call_started").length === 1, "the model call");
  controller.abort();
  const error = await waiting.then(() => undefined, (error) => error);
  assert.ok(error instanceof BrainError && error.code === "cancelled", `not a cancelled BrainError: ${error}`);
  assert.equal(error.cause, controller.signal.reason);
  hold.open();
  await until(session, (seen) => ofKind(seen, "assistant_message").length === 1, "the answer");
  assert.equal((await session.send("again")).content, "second");
  await session.end();
}

Deno.test("hostile send signals: an aborted signal fails send cancelled with a code, before committing when already aborted, embedded and remote", async () => {
  const embeddedHold = gate();
  await using embedded = new Brain({ models: models(embeddedHold.wait) });
  await abortsWithCodes(embedded, embeddedHold);
  const remoteHold = gate();
  await using server = await servedBrain({
    serverToken: OPERATOR,
    pingIntervalMs: 60_000,
    models: models(remoteHold.wait),
  });
  await using client = new Brain({ url: server.url, token: "signals-token", serverToken: OPERATOR, host: "app" });
  await abortsWithCodes(client, remoteHold);
});
