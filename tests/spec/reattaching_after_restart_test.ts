import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, component, httpEnv, type PlacedTool, tool } from "../../mod.ts";
import { PostgresJournal } from "../../src/journal/mod.ts";
import { callKinds, hasCode, postgres, specTest } from "./_brains.ts";
import { extensionEnv, toolExtension } from "../../src/extension/mod.ts";
import { probeTool, probeVariant, reader } from "../_support/components.ts";
import { scratchDir } from "../_support/scratch.ts";
import { serve } from "../_support/serve.ts";

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

let countedRuns: string[] = [];
const counted = tool({
  name: "counted",
  description: "Counts its runs.",
  input: z.object({}),
  run: (_input, ctx) => (countedRuns.push("run counted"), ctx.finish(null)),
});
const fetchItem = tool({
  name: "fetch_item",
  description: "Fetch one item.",
  input: z.object({ id: z.string() }),
  implementation: () => ({ type: "http_json", method: "GET", path: "/items/{id}" }),
});

let counting: { url: string; host: string; requests: string[]; [Symbol.asyncDispose](): Promise<void> };
specTest(
  "an already expired call reaches no placement: no extension run, no HTTP request, no Component; later calls do",
  async (brain) => {
    await using server = counting;
    const env = extensionEnv({ name: "app-http", url: `${server.url}/brain` });
    const items = httpEnv({ name: "items", baseUrl: server.url });
    const session = await brain.sessions.create({
      tools: [counted({ env }), fetchItem({ env: items }), probeTool("spin")({ env: reader })],
    });
    for (const [name, input] of [["counted", {}], ["fetch_item", { id: "7" }], ["spin", null]] as const) {
      const end = await session.call(name, input, { deadline: Date.now() - 1 });
      assert.deepEqual([end.cause, end.outcome.status], ["timeout", "timeout"], name);
      assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_call_finished"], name);
    }
    // The sentinels: the same placements, called in time, are reached.
    assert.equal((await session.call("counted", {})).cause, "finish");
    assert.equal((await session.call("fetch_item", { id: "8" })).cause, "finish");
    assert.deepEqual(server.requests, ["run counted", "GET /items/8"]);
  },
  () => {
    const requests: string[] = [];
    const extension = toolExtension({ tools: [counted()] });
    const server = serve((request) => {
      const url = new URL(request.url);
      if (url.pathname.startsWith("/items/")) {
        requests.push(`GET ${url.pathname}`);
        return Response.json({ id: url.pathname.slice(7) });
      }
      return extension.fetch(new Request(new URL(url.pathname.replace(/^\/brain/, ""), url), request));
    });
    counting = Object.assign(server, { requests });
    countedRuns = requests;
    return { allow: { net: [server.host], workspaceRoot: ".tmp/ws-spec", filesystem: ["read" as const] } };
  },
);

specTest(
  "a session holding a Component and a host Tool reopens with both, the Component with its original bytes: its calls before and after are journaled in order",
  async (brain) => {
    const created = await brain.sessions.create({ tools: [probeTool("echo")(), note()] });
    assert.equal((await created.call("echo", { status: "ok", value: 1 })).cause, "finish");
    await created.end();
    await assert.rejects(
      brain.sessions.get(created.id, { tools: [note()] }),
      hasCode("reattach_mismatch", /tool echo/),
    );
    const otherBytes = component(await probeVariant(scratchDir("reattaching_after_restart"), 16));
    await assert.rejects(
      brain.sessions.get(created.id, { tools: [note(), probeTool("echo", otherBytes)()] }),
      hasCode("reattach_mismatch", /tool echo: its sha256 differs/),
    );
    const restored = await brain.sessions.get(created.id, { tools: [note(), probeTool("echo")()] });
    assert.deepEqual((await restored.call("echo", { status: "ok", value: 2 })).outcome, { status: "ok", value: 2 });
    const started = (await restored.read()).flatMap((record) =>
      record.kind === "tool_call_started" ? [[record.tool, record.input]] : []
    );
    assert.deepEqual(started, [["echo", { status: "ok", value: 1 }], ["echo", { status: "ok", value: 2 }]]);
  },
);

Deno.test("schema export happens when the Tool is declared: async checks are exported as their types, and declaring or placing runs none", () => {
  let checks = 0;
  const declared = tool({
    name: "checked",
    description: "Checks asynchronously.",
    input: z.object({ id: z.string().refine(async () => (checks++, await true)) }),
    output: z.string().refine(async () => (checks++, await true)),
    run: (_input, ctx) => ctx.finish("x"),
  });
  assert.deepEqual(
    [declared.inputSchema.properties, declared.inputSchema.required, declared.outputSchema?.type],
    [{ id: { type: "string" } }, ["id"], "string"],
  );
  assert.deepEqual(declared().advertised.inputSchema, declared.inputSchema);
  assert.equal(checks, 0, "declaring and placing ran no check");
});

for (const store of ["Deno KV", "PostgreSQL"] as const) {
  Deno.test(
    `after a restart over ${store}, the saved host credentials alone restore the original Tools; nothing is replayed and sequences go on`,
    async () => {
      const runs: string[] = [];
      const held = tool({
        name: "held",
        description: "Stays open.",
        input: z.object({}),
        run: () => void runs.push("held"),
      });
      const tools = () => [lookup()(), held()];
      const path = `${scratchDir("spec-restart")}/brain.kv`;
      const schema = `t_${crypto.randomUUID().replaceAll("-", "")}`;
      const open = async () =>
        store === "Deno KV"
          ? await Brain.open({ path })
          : await Brain.open({ journal: await PostgresJournal.open(postgres.url, { schema }) });
      const host = { id: "app", token: `secret-${crypto.randomUUID()}` };

      const before = await open();
      const created = await before.sessions.create({ tools: tools(), host });
      await created.call("lookup", { id: "1" });
      const left = await created.start("held", {});
      await before.close();
      assert.deepEqual((await left.ended).outcome, { status: "cancelled", message: "the session ended" });

      await using after = await open();
      const [saved] = await after.sessions.list();
      assert.equal(saved.host?.id, "app");
      assert.equal(
        JSON.stringify([saved, await (await after.sessions.get(created.id)).read()]).includes(host.token),
        false,
      );
      for (const credentials of [undefined, { id: "app", token: "a-wrong-token" }]) {
        await assert.rejects(
          after.sessions.get(created.id, { tools: tools(), ...(credentials ? { host: credentials } : {}) }),
          hasCode("unauthorized"),
        );
      }
      const restored = await after.sessions.get(created.id, { tools: tools(), host });
      const end = await restored.call("lookup", { id: "2" });
      assert.deepEqual([end.call, end.outcome], [7, { status: "ok", value: { value: "first:2" } }]);
      assert.deepEqual(runs, ["held"], "the open call was never dispatched again");
      assert.deepEqual(await callKinds(restored, left.sequence), [
        "tool_call_started",
        "tool_returned",
        "tool_call_finished",
      ]);
    },
  );
}
