import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, type PlacedTool, tool } from "../../mod.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { probeTool } from "../_support/components.ts";
import { scratchDir } from "../_support/scratch.ts";

const dir = scratchDir("reattach_test");
const host = { id: "billing-app", token: crypto.randomUUID() };

const lookup = tool({
  name: "lookup",
  description: "Look up one record.",
  input: z.object({ id: z.string() }),
  output: z.object({ value: z.string() }),
  run: ({ id }, ctx) => ctx.finish({ value: `first:${id}` }),
});
const note = tool({
  name: "note",
  description: "Write a note.",
  input: z.object({ text: z.string() }),
  run: (_input, ctx) => ctx.finish(null),
});

/** A session created in one Brain over a fresh KV file, which is then closed. */
async function savedSession(tools: PlacedTool[] = [lookup(), note()]): Promise<{ path: string; id: string }> {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  await using brain = await Brain.open({ path });
  const session = await brain.sessions.create({ tools, host });
  await session.call("lookup", { id: "7" });
  return { path, id: session.id };
}

async function withReopened(path: string, fn: (brain: Brain) => Promise<void>): Promise<void> {
  await using brain = await Brain.open({ path });
  await fn(brain);
}

const isError = (code: string, check: (error: BrainError) => void = () => {}) => (error: unknown) => {
  assert.ok(error instanceof BrainError, String(error));
  assert.equal(error.code, code, error.message);
  check(error);
  return true;
};

Deno.test("reattach: the original tools restore handlers for future calls after a restart", async () => {
  const { path, id } = await savedSession();
  const calls: string[] = [];
  const restored = tool({
    name: "lookup",
    description: "Look up one record.",
    input: z.object({ id: z.string() }),
    output: z.object({ value: z.string() }),
    run: ({ id }, ctx) => {
      calls.push(id);
      return ctx.finish({ value: `second:${id}` });
    },
  });
  await withReopened(path, async (brain) => {
    const session = await brain.sessions.get(id, { tools: [restored(), note()], host });
    const end = await session.call("lookup", { id: "8" });
    assert.deepEqual(end.outcome, { status: "ok", value: { value: "second:8" } });
    assert.deepEqual(calls, ["8"]);
    const records = await session.read();
    assert.deepEqual(records.map((record) => record.sequence), records.map((_, index) => index + 1));
    const started = records.filter((record) => record.kind === "tool_call_started");
    assert.deepEqual(started.map((record) => record.input), [{ id: "7" }, { id: "8" }]);
  });
});

Deno.test("reattach: get(id) alone opens a reading handle that holds no handlers and needs no credentials", async () => {
  const { path, id } = await savedSession();
  await withReopened(path, async (brain) => {
    const session = await brain.sessions.get(id);
    assert.equal((await session.read()).at(-1)?.kind, "tool_call_finished");
    await assert.rejects(session.start("lookup", { id: "9" }), isError("unknown_tool"));
  });
});

const mismatches: [string, () => PlacedTool[], { tool: string; difference: string }][] = [
  ["a missing tool", () => [lookup()], {
    tool: "note",
    difference: "it was placed in the session but is missing now",
  }],
  ["an extra tool", () => [
    lookup(),
    note(),
    tool({ name: "extra", description: "New.", input: z.object({}), run: (_i, ctx) => ctx.finish() })(),
  ], { tool: "extra", difference: "it was not placed in the session" }],
  ["a changed input schema", () => [
    tool({
      name: "lookup",
      description: "Look up one record.",
      input: z.object({ id: z.number() }),
      output: z.object({ value: z.string() }),
      run: (_i, ctx) => ctx.finish({ value: "" }),
    })(),
    note(),
  ], { tool: "lookup", difference: 'its inputSchema differs at /properties/id/type: was "string", now "number"' }],
  ["a changed output schema", () => [
    lookup(),
    tool({
      name: "note",
      description: "Write a note.",
      input: z.object({ text: z.string() }),
      output: z.null(),
      run: (_i, ctx) => ctx.finish(null),
    })(),
  ], { tool: "note", difference: "its outputSchema differs at /: was absent, now " }],
  ["a new required output field", () => [
    tool({
      name: "lookup",
      description: "Look up one record.",
      input: z.object({ id: z.string() }),
      output: z.object({ value: z.string(), at: z.number() }),
      run: (_i, ctx) => ctx.finish({ value: "", at: 0 }),
    })(),
    note(),
  ], { tool: "lookup", difference: "its outputSchema differs at /properties/at: was absent, now " }],
];

for (const [what, tools, expected] of mismatches) {
  Deno.test(`reattach: ${what} fails with reattach_mismatch naming the tool and the difference`, async () => {
    const { path, id } = await savedSession();
    await withReopened(path, async (brain) => {
      const before = await (await brain.sessions.get(id)).read();
      await assert.rejects(
        brain.sessions.get(id, { tools: tools(), host }),
        isError("reattach_mismatch", (error) => {
          const details = error.details as { tool: string; difference: string };
          assert.equal(details.tool, expected.tool);
          assert.ok(details.difference.startsWith(expected.difference), details.difference);
          assert.ok(error.message.includes(`tool ${expected.tool}: ${details.difference}`), error.message);
        }),
      );
      assert.deepEqual(await (await brain.sessions.get(id)).read(), before);
    });
  });
}

Deno.test("reattach: handlers are restored only under the registered host's credentials", async () => {
  const { path, id } = await savedSession();
  await withReopened(path, async (brain) => {
    const tools = [lookup(), note()];
    const noToken = (error: BrainError) => assert.ok(!error.message.includes(host.token), error.message);
    await assert.rejects(brain.sessions.get(id, { tools }), isError("unauthorized", noToken));
    await assert.rejects(
      brain.sessions.get(id, { tools, host: { id: host.id, token: "wrong" } }),
      isError("unauthorized", noToken),
    );
    await assert.rejects(
      brain.sessions.get(id, { tools, host: { id: "other-app", token: host.token } }),
      isError("unauthorized", noToken),
    );
    const session = await brain.sessions.get(id, { tools, host });
    assert.equal((await session.call("note", { text: "hi" })).cause, "finish");
  });
});

Deno.test("reattach: credentials for a session without a registered host are refused", async () => {
  await using brain = await Brain.open({ path: `${dir}/${crypto.randomUUID()}.kv` });
  const session = await brain.sessions.create({ tools: [note()] });
  await assert.rejects(brain.sessions.get(session.id, { tools: [note()], host }), isError("unauthorized"));
  await brain.sessions.get(session.id, { tools: [note()] });
});

Deno.test("reattach: bad host credentials at creation fail with invalid_argument and store nothing", async () => {
  await using brain = new Brain();
  for (const bad of [{ id: "", token: "t" }, { id: "app", token: "" }]) {
    await assert.rejects(brain.sessions.create({ id: "s", host: bad }), isError("invalid_argument"));
  }
  assert.deepEqual(await brain.sessions.list(), []);
});

Deno.test("reattach: a Component session saved before Brain kept Component hashes still reopens with its Component", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const echo = probeTool("echo")();
  {
    await using brain = await Brain.open({ path });
    await brain.sessions.create({ id: "older", tools: [echo] });
  }
  const journal = await KvJournal.open(path);
  try {
    const meta = (await journal.getSession("older"))!;
    assert.match(meta.tools[0].sha256 ?? "", /^[0-9a-f]{64}$/, "a session keeps its Component's hash");
    await journal.deleteSession("older");
    await journal.createSession({ ...meta, tools: meta.tools.map(({ sha256: _, ...older }) => older) });
  } finally {
    await journal.close();
  }
  await using brain = await Brain.open({ path });
  const reopened = await brain.sessions.get("older", { tools: [probeTool("echo")()] });
  assert.deepEqual((await reopened.call("echo", { status: "ok", value: 3 })).outcome, { status: "ok", value: 3 });
});
