import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, type ModelProvider, type SessionModel, tool } from "../../mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { trap } from "../_support/trap.ts";

const codeOf = (error: unknown) => error instanceof BrainError ? error.code : `a bare ${error}`;

Deno.test("hostile ctx.model: requests that are Proxies, getters or not JSON are refused invalid_argument", async () => {
  const requests: [string, unknown][] = [
    ["a Proxy", trap()],
    ["Proxy messages", { messages: trap() }],
    ["a Proxy message", { messages: [trap()] }],
    ["a throwing getter", {
      get messages() {
        throw new Error("getter");
      },
    }],
    ["Proxy tools", { messages: [{ role: "user", content: "hi" }], tools: trap() }],
    ["a bigint", { messages: [{ role: "user", content: "hi" }], temperature: 1n }],
    ["an unknown field", { messages: [{ role: "user", content: "hi" }], model: "other" }],
  ];
  const codes: string[] = [];
  const asker = tool({
    name: "asker",
    description: "Asks the model badly.",
    input: z.object({}),
    run: async (_input, ctx) => {
      for (const [, request] of requests) codes.push(await ctx.model(request as never).then(() => "accepted", codeOf));
      return ctx.finish(null);
    },
  });
  await using brain = new Brain();
  const model = { provider: new ScriptedProvider(["unused"]), model: "m" };
  const session = await brain.sessions.create({ tools: [asker()], model });
  assert.deepEqual((await session.call("asker", {})).outcome, { status: "ok", value: null });
  assert.deepEqual(codes, requests.map(() => "invalid_argument"));
});

Deno.test("hostile model providers: results that are Proxies, malformed or thrown oddly reject with codes, no call left open", async () => {
  const answers: [string, () => unknown][] = [
    ["a Proxy", () => trap()],
    ["content as a number", () => ({ content: 5, toolCalls: [], stopReason: "stop", model: "m" })],
    ["a result holding a bigint", () => ({ content: "x", toolCalls: [], stopReason: "stop", model: "m", extra: 1n })],
    ["a thrown Proxy", () => {
      throw trap();
    }],
    ["a thrown object whose toString throws", () => {
      throw {
        toString() {
          throw new Error("toString");
        },
      };
    }],
  ];
  for (const [what, answer] of answers) {
    const provider: ModelProvider = { name: "hostile", complete: () => Promise.resolve().then(answer) as never };
    await using brain = new Brain();
    const session = await brain.sessions.create({ model: { provider, model: "m" } });
    const error = await session.send("hi").then(() => undefined, (error) => error);
    assert.ok(error instanceof BrainError, `${what}: ${error}`);
    const kinds = (await session.read()).map((record) => record.kind);
    const started = kinds.filter((kind) => kind === "model_call_started").length;
    assert.ok(started > 0, what);
    assert.equal(
      kinds.filter((kind) => kind === "model_call_finished").length,
      started,
      `${what}: a model call left open`,
    );
  }
});

Deno.test("hostile model providers: a provider whose name, model or complete getter throws after the session was created still ends each call with a code", async () => {
  const reply = { content: "hi", toolCalls: [], stopReason: "stop", model: "m" };
  /** A getter answering `first` on its first read, then throwing `thrown`. */
  const changing = <T>(first: T, thrown: unknown) => {
    let reads = 0;
    return () => {
      if (reads++ === 0) return first;
      throw thrown;
    };
  };
  const name = changing("hostile", null);
  const complete = changing(() => Promise.resolve(reply), undefined);
  const provider = {
    get name() {
      return name();
    },
    get complete() {
      return complete();
    },
  } as unknown as ModelProvider;
  const modelName = changing("m", "no model");
  const model = {
    provider,
    get model() {
      return modelName();
    },
  } as unknown as SessionModel;
  await using brain = new Brain();
  const session = await brain.sessions.create({ model });
  const reached = await session.send("hi").then(() => "a reply", codeOf);
  assert.equal(reached, "model_error");
  const records = await session.read();
  const started = records.filter((record) => record.kind === "model_call_started");
  assert.equal(started.length, 1);
  assert.deepEqual(
    started.map((record) => [record.provider, record.model]),
    [["hostile", "m"]],
    "the call records the names the session was created with",
  );
  assert.equal(records.filter((record) => record.kind === "model_call_finished").length, 1, "no model call left open");
});
