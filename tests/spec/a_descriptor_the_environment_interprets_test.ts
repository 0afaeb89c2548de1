import assert from "node:assert/strict";
import { z } from "zod";
import { BrainError, type Environment, type JsonValue, ok, tool } from "../../mod.ts";
import type { Descriptor, Dispatch } from "../../src/env/mod.ts";
import { specTest } from "./_brains.ts";

/** An Environment of its own kind, interpreting descriptors Brain knows nothing of, and keeping each it is handed. */
function recordingEnv(handed: Descriptor[]): Environment {
  return {
    name: "custom",
    kind: "custom",
    describe: () => ({ kind: "custom" }),
    interpret(descriptor: Descriptor, { invocation, sink }: Dispatch) {
      handed.push(descriptor);
      sink.finish({ outcome: ok({ descriptor, input: invocation.input } as JsonValue) });
    },
  };
}

specTest(
  "Brain hands the Environment its own immutable descriptor, untouched and opaque, with every invoke",
  async (brain) => {
    const handed: Descriptor[] = [];
    const made = { type: "custom_rpc", route: "issues.get", nested: { tags: ["a"], weight: 0.5 }, status: "error" };
    const fetchIssue = tool({
      name: "fetch_issue",
      description: "Fetch one issue.",
      input: z.object({ number: z.number().int() }),
      options: z.object({ repository: z.string() }),
      implementation: ({ repository }) => ({ ...made, repository }),
    });
    const session = await brain.sessions.create({
      tools: [fetchIssue({ env: recordingEnv(handed), repository: "aexhq/brain" })],
    });
    made.nested.tags.push("changed after placement");
    const expected = { type: "custom_rpc", route: "issues.get", nested: { tags: ["a"], weight: 0.5 }, status: "error" };
    for (const number of [1, 2]) {
      const end = await session.call("fetch_issue", { number });
      assert.deepEqual(end.outcome, ok({ descriptor: { ...expected, repository: "aexhq/brain" }, input: { number } }));
    }
    assert.equal(handed.length, 2, "one invoke per call");
    for (const descriptor of handed) {
      assert.deepEqual(descriptor, { ...expected, repository: "aexhq/brain" });
      assert.ok(Object.isFrozen(descriptor) && Object.isFrozen(descriptor.nested), "immutable");
    }
  },
);

specTest(
  "an Environment whose interpret throws, or rejects as an async function, fails the call tool_error, leaving nothing open",
  async (brain) => {
    const broken = (name: string, interpret: Environment["interpret"]): Environment => ({
      name,
      kind: "custom",
      describe: () => ({ kind: "custom" }),
      interpret,
    });
    const throwing = broken("throwing", () => {
      throw new TypeError("interpret bug");
    });
    const rejecting = broken(
      "rejecting",
      (async () => {
        await Promise.resolve();
        throw new TypeError("async interpret bug");
      }) as unknown as Environment["interpret"],
    );
    const declared = (name: string) =>
      tool({ name, description: "Opaque.", input: z.object({}), implementation: () => ({ type: "opaque" }) });
    const session = await brain.sessions.create({
      tools: [declared("sync")({ env: throwing }), declared("async")({ env: rejecting })],
    });
    for (const [name, message] of [["sync", "interpret bug"], ["async", "async interpret bug"]]) {
      const end = await session.call(name, {}, { timeoutMs: 5_000 });
      assert.deepEqual(
        [end.cause, end.outcome.status === "error" && [end.outcome.error.code, end.outcome.error.message]],
        ["error", ["tool_error", message]],
      );
    }
  },
);

Deno.test("an Environment's descriptor check that throws something other than a BrainError is invalid_tool at placement", () => {
  const picky: Environment = {
    name: "picky",
    kind: "custom",
    describe: () => ({ kind: "custom" }),
    interpret: () => {},
    checkDescriptor: () => {
      throw new RangeError("no such route");
    },
  };
  const declared = tool({
    name: "t",
    description: "Opaque.",
    input: z.object({}),
    implementation: () => ({ type: "x" }),
  });
  assert.throws(
    () => declared({ env: picky }),
    (error) => error instanceof BrainError && error.code === "invalid_tool",
  );
});
