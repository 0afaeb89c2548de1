import assert from "node:assert/strict";
import { z } from "zod";
import { type BrainSession, type CallEnd, tool } from "../../mod.ts";
import type { ProviderCall } from "../../src/model/types.ts";
import { ScriptedProvider, type ScriptStep } from "../../src/model/testing.ts";
import { gate } from "./gate.ts";

/** A model step that answers only when its call is aborted, by rejecting with the abort's reason. */
export const hanging = (): ScriptStep => (call: ProviderCall) =>
  new Promise<never>((_, reject) => call.signal.addEventListener("abort", () => reject(call.signal.reason)));

/**
 * An `ask` Tool that asks the model its `question` and finishes with the answer; `kindsAtAnswer` holds the
 * kinds of `session()`'s records as the answer reached the Tool.
 */
export function askingTool(session: () => BrainSession) {
  const seen = { kindsAtAnswer: [] as string[] };
  const ask = tool({
    name: "ask",
    description: "Asks the model on its own.",
    input: z.object({ question: z.string() }),
    run: async ({ question }, ctx) => {
      const answer = await ctx.model({ messages: [{ role: "user", content: question }] });
      seen.kindsAtAnswer = (await session().read()).map((record) => record.kind);
      return ctx.finish(answer.content);
    },
  });
  return { ask, seen };
}

/** A `waiter` Tool that asks the model and keeps what the request settled with in `seen.caught`; `settled` opens then. */
export function modelWaiter() {
  const settled = gate();
  const seen: { caught?: unknown } = {};
  const waiter = tool({
    name: "waiter",
    description: "Waits for the model.",
    input: z.object({}),
    run: async (_input, ctx) => {
      seen.caught = await ctx.model({ messages: [{ role: "user", content: "slow" }] }).catch((error) => error);
      settled.open();
    },
  });
  return { waiter, settled, seen };
}

/** A Tool named `name` that asks the session's model its own name and finishes with the answer. */
export function asker(name: string) {
  return tool({
    name,
    description: "Asks the model.",
    input: z.object({}),
    run: async (_input, ctx) => ctx.finish((await ctx.model({ messages: [{ role: "user", content: name }] })).content),
  });
}

/** A model that answers only once two calls are waiting on it at once, each with `answer to <question>`. */
export function answersBothAtOnce(): ScriptedProvider {
  const both = gate();
  let waiting = 0;
  return new ScriptedProvider(Array.from({ length: 2 }, () => async (call) => {
    if (++waiting === 2) both.open();
    await both.wait;
    return `answer to ${(call.request.messages[0] as { content: string }).content}`;
  }));
}

/**
 * Calls the `alpha` and `beta` {@linkcode asker}s of `session` at once in one activation, over a model of
 * {@linkcode answersBothAtOnce}, and checks each got its own answer.
 */
export async function askBoth(session: BrainSession): Promise<{ a: CallEnd; b: CallEnd; modelCalls: number }> {
  const activation = session.activation();
  const [a, b] = await Promise.all([
    session.call("alpha", {}, { activation }),
    session.call("beta", {}, { activation }),
  ]);
  assert.deepEqual([a.outcome, b.outcome], [
    { status: "ok", value: "answer to alpha" },
    { status: "ok", value: "answer to beta" },
  ]);
  return { a, b, modelCalls: activation.modelCalls };
}
