import assert from "node:assert/strict";
import { z } from "zod";
import { type Activation, Brain, type BrainSession, tool } from "../../mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { servedBrain } from "../_support/served_brain.ts";

/** What a caller's activation showed: after each report the Tool awaited, and after the call's end. */
interface Seen {
  during: { emittedBytes: number; modelCalls: number }[];
  after: { emittedBytes: number; modelCalls: number };
}

const counts = ({ emittedBytes, modelCalls }: Activation) => ({ emittedBytes, modelCalls });

/**
 * A Tool that emits an event, asks the session's model, publishes a result and
 * finishes, noting what the caller's activation shows after each step.
 */
function spender(watched: () => Activation) {
  const during: Seen["during"] = [];
  const declared = tool({
    name: "spend",
    description: "Spends from its activation's budgets.",
    input: z.object({ text: z.string() }),
    run: async ({ text }, ctx) => {
      await ctx.emit("noted", { text });
      during.push(counts(watched()));
      await ctx.model({ messages: [{ role: "user", content: text }] });
      during.push(counts(watched()));
      await ctx.emitResult({ echoed: text });
      during.push(counts(watched()));
      return ctx.finish({ done: text.length });
    },
  });
  return { during, placed: () => declared() };
}

/** Calls `spend` twice with one activation (`start`, then `call`) and notes what the activation showed. */
async function spend(session: BrainSession, during: Seen["during"], hold: { activation?: Activation }) {
  const activation = hold.activation = session.activation();
  const started = await session.start("spend", { text: "first" }, { activation });
  await started.ended;
  const first = counts(activation);
  await session.call("spend", { text: "second, longer" }, { activation });
  return { first, seen: { during: [...during], after: counts(activation) } };
}

Deno.test("a remote caller's activation counts what its calls emitted and the model calls they made, as embedded", async () => {
  const embeddedHold: { activation?: Activation } = {};
  const embeddedTool = spender(() => embeddedHold.activation!);
  await using embedded = new Brain();
  const local = await embedded.sessions.create({
    tools: [embeddedTool.placed()],
    model: { provider: new ScriptedProvider(["a", "b"]), model: "fixed" },
  });
  const expected = await spend(local, embeddedTool.during, embeddedHold);
  assert.ok(expected.seen.after.emittedBytes > 0 && expected.seen.after.modelCalls === 2, "embedded counts");

  await using server = await servedBrain({
    serverToken: "operator-secret",
    models: { default: { provider: new ScriptedProvider(["a", "b"]), model: "fixed" } },
  });
  await using remote = new Brain({
    url: server.url,
    token: "usage-token",
    host: "usage",
    serverToken: "operator-secret",
  });
  const remoteHold: { activation?: Activation } = {};
  const remoteTool = spender(() => remoteHold.activation!);
  const session = await remote.sessions.create({ tools: [remoteTool.placed()], model: "default" });
  const actual = await spend(session, remoteTool.during, remoteHold);
  assert.deepEqual(actual, expected);
});

Deno.test("a remote activation counts only the calls it was named for, as embedded", async () => {
  const emitter = tool({
    name: "emit",
    description: "Emits one event and finishes.",
    input: z.object({ size: z.number() }),
    run: async ({ size }, ctx) => {
      await ctx.emit("filler", "x".repeat(size));
      return ctx.finish(null);
    },
  });
  const counted = async (brain: Brain) => {
    const session = await brain.sessions.create({ tools: [emitter()] });
    const named = session.activation();
    const other = session.activation();
    await session.call("emit", { size: 10 }, { activation: named });
    await session.call("emit", { size: 1_000 });
    await session.call("emit", { size: 100 }, { activation: other });
    return [named.emittedBytes, other.emittedBytes];
  };
  await using embedded = new Brain();
  const expected = await counted(embedded);
  assert.equal(expected[1] - expected[0], 90, "each counts its own call alone");
  await using server = await servedBrain({ serverToken: "operator-secret" });
  await using remote = new Brain({
    url: server.url,
    token: "usage-token",
    host: "usage",
    serverToken: "operator-secret",
  });
  assert.deepEqual(await counted(remote), expected);
});
