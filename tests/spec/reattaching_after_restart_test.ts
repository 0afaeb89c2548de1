import assert from "node:assert/strict";
import { z } from "zod";
import { BrainError, type PlacedTool, tool } from "../../mod.ts";
import { hasCode, specTest } from "./_brains.ts";

const lookup = (answer = "first") =>
  tool({
    name: "lookup",
    description: "Look up one record.",
    input: z.object({ id: z.string() }),
    output: z.object({ value: z.string() }),
    run: ({ id }, ctx) => ctx.finish({ value: `${answer}:${id}` }),
  });
const note = tool({
  name: "note",
  description: "Write a note.",
  input: z.object({ text: z.string() }),
  run: (_input, ctx) => ctx.finish(null),
});

const mismatches: [string, () => PlacedTool[], string][] = [
  ["a missing Tool", () => [lookup()()], "note"],
  ["an extra Tool", () => [lookup()(), note(), tool({ ...spec("extra") })()], "extra"],
  ["a changed input schema", () => [
    tool({ ...spec("lookup"), input: z.object({ id: z.number() }), output: z.object({ value: z.string() }) })(),
    note(),
  ], "lookup"],
  ["an input field that became optional", () => [
    tool({
      ...spec("lookup"),
      input: z.object({ id: z.string().optional() }),
      output: z.object({ value: z.string() }),
    })(),
    note(),
  ], "lookup"],
  ["an added output schema", () => [lookup()(), tool({ ...spec("note"), output: z.null() })()], "note"],
  [
    "a removed output schema",
    () => [tool({ ...spec("lookup"), input: z.object({ id: z.string() }) })(), note()],
    "lookup",
  ],
  ["a changed output schema", () => [
    tool({ ...spec("lookup"), input: z.object({ id: z.string() }), output: z.object({ value: z.number() }) })(),
    note(),
  ], "lookup"],
];

function spec(name: string) {
  return {
    name,
    description: "Same name, another contract.",
    input: z.object({}),
    // Never called: these placements are refused before any call.
    run: () => undefined,
  };
}

for (const [what, tools, named] of mismatches) {
  specTest(`reattaching with ${what} is reattach_mismatch naming the Tool, and takes nothing`, async (brain) => {
    const created = await brain.sessions.create({ tools: [lookup()(), note()] });
    await created.call("lookup", { id: "1" });
    await created.end();
    await assert.rejects(brain.sessions.get(created.id, { tools: tools() }), (error: unknown) => {
      assert.ok(error instanceof BrainError, String(error));
      assert.equal(error.code, "reattach_mismatch", error.message);
      assert.match(error.message, new RegExp(`tool ${named}\\b`));
      return true;
    });
    const restored = await brain.sessions.get(created.id, { tools: [lookup("second")(), note()] });
    assert.deepEqual((await restored.call("lookup", { id: "2" })).outcome, {
      status: "ok",
      value: { value: "second:2" },
    });
  });
}

specTest("get(id) alone opens a reading handle without handlers; the original Tools restore them", async (brain) => {
  const created = await brain.sessions.create({ tools: [lookup()(), note()] });
  await created.call("lookup", { id: "1" });
  await created.end();
  const reader = await brain.sessions.get(created.id);
  assert.deepEqual(reader.tools, []);
  assert.equal((await reader.read()).length, 3);
  await assert.rejects(reader.call("lookup", { id: "x" }), hasCode("unknown_tool"));
  assert.equal((await reader.read()).length, 3);
  const restored = await brain.sessions.get(created.id, { tools: [note(), lookup("second")()] });
  assert.deepEqual(restored.tools.map((placed) => placed.advertised.name).sort(), ["lookup", "note"]);
  const end = await restored.call("lookup", { id: "2" });
  assert.deepEqual([end.call, end.outcome], [4, { status: "ok", value: { value: "second:2" } }]);
});

specTest("the same contract under another description or handler is the original contract", async (brain) => {
  const created = await brain.sessions.create({ tools: [lookup()()] });
  await created.end();
  const reworded = tool({
    name: "lookup",
    description: "Look up one record, reworded.",
    input: z.object({ id: z.string() }),
    output: z.object({ value: z.string() }),
    run: ({ id }, ctx) => ctx.finish({ value: `reworded:${id}` }),
  });
  const restored = await brain.sessions.get(created.id, { tools: [reworded()] });
  assert.deepEqual((await restored.call("lookup", { id: "3" })).outcome, {
    status: "ok",
    value: { value: "reworded:3" },
  });
});
