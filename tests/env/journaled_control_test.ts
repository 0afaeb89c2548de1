import assert from "node:assert/strict";
import { Hono } from "hono";
import { z } from "zod";
import { Brain, BrainError, type EnvironmentControl, hostEnv, type JsonValue, tool } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { scratchDir } from "../_support/scratch.ts";
import { serve } from "../_support/serve.ts";
import { hasCode } from "../_support/has_code.ts";
import { soon } from "../_support/deadline.ts";

const dir = scratchDir("journaled_control_test");
const all = ["list", "get", "create", "update", "setup", "delete", "call"] as const;
const code = (operation: () => Promise<unknown>): Promise<JsonValue> =>
  operation().then(() => "done", (error) => error instanceof BrainError ? error.code : String(error));

/** A host Tool in `ops` (every operation granted) that runs step `input.step` of `steps` and finishes with its result. */
function operator(steps: ((environments: EnvironmentControl) => Promise<JsonValue>)[], setup?: () => void) {
  const operate = tool({
    name: "operate",
    description: "Operate on environments.",
    input: z.object({ step: z.number().int() }),
    run: async ({ step }, ctx) => ctx.finish(await steps[step](ctx.environments)),
  });
  return operate({ env: hostEnv({ name: "ops", control: all, setup }) });
}

const environmentRecords = (records: JournalRecord[]) => records.filter((record) => record.kind.startsWith("env"));

Deno.test("ctx.environments changes are committed in order with the call's other records", async () => {
  let setups = 0;
  const placed = tool({
    name: "operate",
    description: "Operate on environments.",
    input: z.object({}),
    run: async (_, ctx) => {
      const before = ctx.emit("before", null);
      const results = [
        await ctx.environments.create({ kind: "http", name: "store", baseUrl: "http://127.0.0.1:1/v1" }),
        await code(() => ctx.environments.create({ kind: "http", name: "far", baseUrl: "http://192.0.2.1" })),
        await ctx.environments.update("store", {
          kind: "http",
          name: "store",
          baseUrl: "http://127.0.0.1:1/v2",
          headers: { authorization: "Bearer secret-token" },
        }),
        await code(() => ctx.environments.update("ops", { kind: "http", name: "ops", baseUrl: "http://127.0.0.1:1" })),
        await code(() => ctx.environments.setup("ops")),
        await code(() => ctx.environments.setup("ops")),
        await code(() => ctx.environments.delete("store")),
      ];
      await before;
      await ctx.emit("after", null);
      return ctx.finish(results as JsonValue);
    },
  })({
    env: hostEnv({
      name: "ops",
      control: all,
      setup: () => {
        if (++setups === 3) throw new Error("third setup breaks");
      },
    }),
  });
  await using brain = new Brain({ allow: { net: ["127.0.0.1:1"] } });
  const session = await brain.sessions.create({ tools: [placed] });
  const end = await session.call("operate", {}, { deadline: soon() });
  assert.equal(end.outcome.status, "ok", JSON.stringify(end.outcome));
  const results = end.outcome.status === "ok" ? end.outcome.value as JsonValue[] : [];
  assert.deepEqual(results.slice(1), [
    "permission_denied",
    results[2],
    "permission_denied",
    "done",
    "setup_failed",
    "done",
  ]);
  const records = await session.read();
  assert.deepEqual(records.map((record) => record.kind), [
    "tool_call_started",
    "tool_event",
    "environment_created",
    "environment_updated",
    "environment_setup",
    "environment_setup",
    "environment_deleted",
    "tool_event",
    "tool_result",
    "tool_call_finished",
  ]);
  const call = end.call;
  assert.deepEqual(environmentRecords(records).map(({ sequence: _, at: __, sessionId: ___, ...body }) => body), [
    {
      kind: "environment_created",
      call,
      environment: "store",
      description: (results[0] as { description: JsonValue }).description,
    },
    {
      kind: "environment_updated",
      call,
      environment: "store",
      description: (results[2] as { description: JsonValue }).description,
    },
    { kind: "environment_setup", call, environment: "ops", outcome: { status: "ok", value: null } },
    {
      kind: "environment_setup",
      call,
      environment: "ops",
      outcome: {
        status: "error",
        error: { code: "setup_failed", message: "environment ops: setup failed: third setup breaks" },
      },
    },
    { kind: "environment_deleted", call, environment: "store" },
  ]);
  assert.deepEqual((results[2] as { description: { headers: string[] } }).description.headers, ["authorization"]);
  assert.ok(!JSON.stringify(records).includes("secret-token"), "header values never enter the journal");
});

Deno.test("created Environments and deletes survive reopening the session over a KV file", async () => {
  const api = new Hono();
  api.get("/items/:id", (c) => c.json({ id: c.req.param("id"), key: c.req.header("x-key") ?? null }));
  await using server = serve(api.fetch);
  const root = `${dir}/workspaces`;
  await Deno.mkdir(root);
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const allow = { net: [server.host], workspaceRoot: root, filesystem: ["write" as const] };
  const item = { type: "http_json", method: "GET", path: "/items/{id}" } as const;
  const listed = async (environments: EnvironmentControl) =>
    (await environments.list()).map(({ name, created, description }) => ({ name, created, description }));
  const placed = operator([
    async (environments) => {
      await environments.create({ kind: "http", name: "store", baseUrl: server.url });
      await environments.create({ kind: "http", name: "keyed", baseUrl: server.url, headers: { "x-key": "k1" } });
      await environments.create({ kind: "brain", name: "scratch", filesystem: { workspace: "write" } });
      await environments.create({ kind: "http", name: "doomed", baseUrl: server.url });
      await environments.delete("doomed");
      return await listed(environments);
    },
    async (environments) => [
      await listed(environments) as JsonValue,
      await environments.call("store", item, { id: "a" }),
      await code(() => environments.call("keyed", item, { id: "b" })),
      await code(() => environments.create({ kind: "http", name: "store", baseUrl: server.url })),
      await code(() => environments.delete("doomed")),
      (await environments.update("keyed", {
        kind: "http",
        name: "keyed",
        baseUrl: server.url,
        headers: { "x-key": "k2" },
      })).name,
      await environments.call("keyed", item, { id: "c" }),
      await code(() => environments.delete("scratch")),
    ],
    async (environments) => (await listed(environments)).map((entry) => entry.name),
  ]);
  const step = async (step: number, open: (brain: Brain) => ReturnType<Brain["sessions"]["get"]>) => {
    await using brain = await Brain.open({ path, allow });
    const session = await open(brain);
    const end = await session.call("operate", { step }, { deadline: soon() });
    assert.equal(end.outcome.status, "ok", JSON.stringify(end.outcome));
    return end.outcome.status === "ok" ? end.outcome.value : undefined;
  };

  const before = await step(0, (brain) => brain.sessions.create({ id: "s", tools: [placed] }));
  assert.deepEqual((before as { name: string }[]).map((entry) => entry.name), ["ops", "store", "keyed", "scratch"]);

  const after = await step(1, (brain) => brain.sessions.get("s", { tools: [placed] })) as JsonValue[];
  assert.deepEqual(after[0], before, "the same Environments, created flags and descriptions");
  assert.deepEqual(after.slice(1), [
    { id: "a", key: null },
    "permission_denied",
    "environment_exists",
    "environment_not_found",
    "keyed",
    { id: "c", key: "k2" },
    "done",
  ]);
  assert.equal(await Deno.stat(`${root}/s/scratch`).then(() => true, () => false), false, "delete removed it");

  assert.deepEqual(await step(2, (brain) => brain.sessions.get("s", { tools: [placed] })), ["ops", "store", "keyed"]);
});

Deno.test("a reopened session admits its created Environments again: outside the new allow-list, get is refused", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const placed = operator([
    async (environments) => (await environments.create({ kind: "brain", name: "net", net: ["127.0.0.1:9"] })).name,
  ]);
  const first = await Brain.open({ path, allow: { net: ["127.0.0.1:9"] } });
  try {
    const session = await first.sessions.create({ id: "s", tools: [placed] });
    const end = await session.call("operate", { step: 0 }, { deadline: soon() });
    assert.deepEqual(end.outcome, { status: "ok", value: "net" });
  } finally {
    await first.close();
  }
  await using narrower = await Brain.open({ path });
  await assert.rejects(
    narrower.sessions.get("s", { tools: [placed] }),
    hasCode("permission_denied"),
  );
});
