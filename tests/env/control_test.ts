import assert from "node:assert/strict";
import { Hono } from "hono";
import { z } from "zod";
import {
  Brain,
  brainEnv,
  BrainError,
  type Environment,
  type EnvironmentControl,
  hostEnv,
  httpEnv,
  type JsonValue,
  tool,
} from "../../mod.ts";
import { serve } from "../_support/serve.ts";
import { soon } from "../_support/deadline.ts";

/** A host Tool that runs `script` against ctx.environments and finishes with what it saw, errors as codes. */
function operator(script: (environments: EnvironmentControl) => Promise<JsonValue[]>) {
  return tool({
    name: "operate",
    description: "Operate on environments.",
    input: z.object({}),
    run: async (_, ctx) => ctx.finish(await script(ctx.environments)),
  });
}

const attempt = (operation: () => Promise<unknown>): Promise<JsonValue> =>
  operation().then(
    (value) => (value ?? "done") as JsonValue,
    (error) => ({ error: error instanceof BrainError ? error.code : String(error) }),
  );

async function run(env: Environment | undefined, script: Parameters<typeof operator>[0], brain = new Brain()) {
  try {
    const session = await brain.sessions.create({ id: "s", tools: [operator(script)({ env })] });
    const end = await session.call("operate", {}, { deadline: soon() });
    assert.equal(end.outcome.status, "ok", JSON.stringify(end.outcome));
    return end.outcome.status === "ok" ? end.outcome.value : undefined;
  } finally {
    await brain.close();
  }
}

const everyOperation = (environments: EnvironmentControl) =>
  Promise.all([
    attempt(() => environments.list()),
    attempt(() => environments.get("app")),
    attempt(() => environments.create({ kind: "http", name: "x", baseUrl: "http://127.0.0.1:1" })),
    attempt(() => environments.update("app", { kind: "http", name: "app", baseUrl: "http://127.0.0.1:1" })),
    attempt(() => environments.setup("app")),
    attempt(() => environments.delete("app")),
    attempt(() => environments.call("app", { type: "http_json", method: "GET", path: "/" }, {})),
  ]);

Deno.test("a Tool without control is refused every ctx.environments operation", async () => {
  const denied = Array(7).fill({ error: "permission_denied" });
  assert.deepEqual(await run(undefined, everyOperation), denied);
  assert.deepEqual(await run(hostEnv({ name: "app" }), everyOperation), denied);
});

Deno.test("a binding's control grants exactly the listed operations to its Tools", async () => {
  const seen = await run(hostEnv({ name: "app", control: ["list", "get"] }), everyOperation);
  assert.deepEqual(seen, [
    [{
      name: "app",
      kind: "host",
      description: { kind: "host", name: "app", control: ["list", "get"] },
      created: false,
    }],
    { name: "app", kind: "host", description: { kind: "host", name: "app", control: ["list", "get"] }, created: false },
    ...Array(5).fill({ error: "permission_denied" }),
  ]);
});

Deno.test("created Environments pass the allow-list, can be called, updated and deleted; bindings cannot", async () => {
  const api = new Hono();
  api.get("/v1/items/:id", (c) => c.json({ version: 1, id: c.req.param("id") }));
  api.get("/v2/items/:id", (c) => c.json({ version: 2, id: c.req.param("id") }));
  await using server = serve(api.fetch);
  const item = { type: "http_json", method: "GET", path: "/items/{id}" } as const;
  const all = ["list", "get", "create", "update", "setup", "delete", "call"] as const;
  const seen = await run(
    hostEnv({ name: "ops", control: all }),
    async (environments) => [
      await attempt(() => environments.create({ kind: "http", name: "store", baseUrl: `${server.url}/v1` })),
      await attempt(() => environments.create({ kind: "http", name: "store", baseUrl: `${server.url}/v1` })),
      await attempt(() => environments.create({ kind: "http", name: "far", baseUrl: "http://192.0.2.1" })),
      await attempt(() => environments.call("store", item, { id: "a" })),
      await attempt(() => environments.update("store", { kind: "http", name: "store", baseUrl: `${server.url}/v2` })),
      await attempt(() => environments.call("store", item, { id: "b" })),
      await attempt(() => environments.call("store", { type: "http_json", method: "GET", path: "no-slash" }, {})),
      await attempt(() => environments.call("ops", item, { id: "c" })),
      await attempt(() => environments.update("ops", { kind: "http", name: "ops", baseUrl: server.url })),
      await attempt(() => environments.delete("ops")),
      await attempt(() => environments.delete("store")),
      await attempt(() => environments.get("store")),
      await attempt(() => environments.create({ kind: "brain", name: "w", net: ["192.0.2.1"] })),
      await attempt(() => environments.create({ kind: "shell", name: "s" } as never)),
      (await environments.list()).map((entry) => entry.name),
    ],
    new Brain({ allow: { net: [server.host] } }),
  );
  assert.deepEqual(seen, [
    {
      name: "store",
      kind: "http",
      description: { kind: "http", name: "store", baseUrl: `${server.url}/v1`, headers: [], control: [] },
      created: true,
    },
    { error: "environment_exists" },
    { error: "permission_denied" },
    { version: 1, id: "a" },
    {
      name: "store",
      kind: "http",
      description: { kind: "http", name: "store", baseUrl: `${server.url}/v2`, headers: [], control: [] },
      created: true,
    },
    { version: 2, id: "b" },
    { error: "invalid_tool" },
    { error: "unsupported_runtime" },
    { error: "permission_denied" },
    { error: "permission_denied" },
    "done",
    { error: "environment_not_found" },
    { error: "permission_denied" },
    { error: "invalid_argument" },
    ["ops"],
  ]);
});

Deno.test("a created Brain Environment gets a workspace that delete removes; a spec cannot grant itself control", async () => {
  const root = `.tmp/control-${crypto.randomUUID()}`;
  await Deno.mkdir(root, { recursive: true });
  try {
    const seen = await run(
      brainEnv({ name: "ops", control: ["create", "get", "delete"] }),
      async (environments) => {
        const created = await environments.create(
          { kind: "brain", name: "scratch", filesystem: { workspace: "write" }, control: ["delete"] } as never,
        );
        const exists = (await Deno.stat(`${root}/s/scratch`)).isDirectory;
        await environments.delete("scratch");
        const gone = await Deno.stat(`${root}/s/scratch`).then(() => false, () => true);
        return [created.description, exists, gone];
      },
      new Brain({ allow: { workspaceRoot: root, filesystem: ["write"] } }),
    );
    assert.deepEqual(seen, [
      { kind: "brain", name: "scratch", grant: { filesystem: { workspace: "write" } }, control: [] },
      true,
      true,
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("an HTTP Environment's Tools get its control too (separate binding, separate authority)", () => {
  const env = httpEnv({ name: "api", baseUrl: "http://127.0.0.1:1", control: ["get"] });
  assert.deepEqual(env.control, ["get"]);
});

Deno.test("ctx.environments.create and update use the spec as it was when passed, not as the Tool's object is changed after", async () => {
  const seen = await run(
    hostEnv({ name: "ops", control: ["create", "update"] }),
    async (environments) => {
      const spec = { kind: "http" as const, name: "store", baseUrl: "http://127.0.0.1:1/v1" };
      const created = environments.create(spec);
      spec.baseUrl = "http://127.0.0.1:1/changed";
      spec.name = "renamed";
      const update = { kind: "http" as const, name: "store", baseUrl: "http://127.0.0.1:1/v2" };
      const updated = environments.update("store", update);
      update.baseUrl = "http://127.0.0.1:1/changed";
      return (await Promise.all([created, updated])).map((info) => [info.name, info.description]);
    },
    new Brain({ allow: { net: ["127.0.0.1:1"] } }),
  );
  assert.deepEqual(seen, [
    ["store", { kind: "http", name: "store", baseUrl: "http://127.0.0.1:1/v1", headers: [], control: [] }],
    ["store", { kind: "http", name: "store", baseUrl: "http://127.0.0.1:1/v2", headers: [], control: [] }],
  ]);
});
