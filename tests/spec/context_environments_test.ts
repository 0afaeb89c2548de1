import assert from "node:assert/strict";
import { z } from "zod";
import { BrainError, type EnvironmentControl, hostEnv, type JsonValue, tool } from "../../mod.ts";
import { specTest } from "./_brains.ts";
import { serve } from "../_support/serve.ts";

const EVERY_OPERATION = ["list", "get", "create", "update", "setup", "delete", "call"] as const;

/** What an operation resolved with, or its error code. */
const attempt = (operation: () => Promise<unknown>): Promise<JsonValue> =>
  operation().then(
    (value) => (value ?? "done") as JsonValue,
    (error) => ({ error: error instanceof BrainError ? error.code : String(error) }),
  );

/** The Tool runs every authorized operation, a refused one beside each, and finishes with what each answered. */
function operator(baseUrl: string) {
  const item = { type: "http_json", method: "GET", path: "/items/{id}" } as const;
  const store = (version: string) => ({ kind: "http" as const, name: "store", baseUrl: `${baseUrl}/${version}` });
  const script = async (environments: EnvironmentControl): Promise<JsonValue[]> => [
    await attempt(() => environments.create(store("v1"))),
    await attempt(() => environments.create(store("v1"))),
    await attempt(() => environments.create({ kind: "http", name: "far", baseUrl: "http://192.0.2.1" })),
    await attempt(() => environments.call("store", item, { id: "a" })),
    await attempt(() => environments.update("store", store("v2"))),
    await attempt(() => environments.call("store", item, { id: "b" })),
    await attempt(() => environments.call("ops", item, { id: "c" })),
    await attempt(() => environments.update("ops", { kind: "http", name: "ops", baseUrl })),
    await attempt(() => environments.delete("ops")),
    await attempt(() => environments.setup("ops")),
    await attempt(() => environments.delete("store")),
    await attempt(() => environments.get("store")),
    await attempt(() => environments.create({ kind: "shell", name: "s" } as never)),
    await attempt(() => environments.get(5 as never)),
    (await environments.list()).map((entry) => `${entry.kind}:${entry.name}`),
  ];
  return tool({
    name: "operate",
    description: "Operates on the session's Environments.",
    input: z.object({}),
    run: async (_input, ctx) => ctx.finish(await script(ctx.environments)),
  })({ env: hostEnv({ name: "ops", control: EVERY_OPERATION }) });
}

let api: ReturnType<typeof serve>;
specTest(
  "ctx.environments: list, get, create, update, setup, delete and call as the binding authorizes, each change journaled in order with the call",
  async (brain) => {
    await using _api = api;
    const session = await brain.sessions.create({ tools: [operator(api.url)] });
    const end = await session.call("operate", {});
    const created = (version: string) => ({
      name: "store",
      kind: "http",
      description: { kind: "http", name: "store", baseUrl: `${api.url}/${version}`, headers: [], control: [] },
      created: true,
    });
    assert.deepEqual(end.outcome, {
      status: "ok",
      value: [
        created("v1"),
        { error: "environment_exists" },
        { error: "permission_denied" },
        { version: 1, id: "a" },
        created("v2"),
        { version: 2, id: "b" },
        { error: "unsupported_runtime" },
        { error: "permission_denied" },
        { error: "permission_denied" },
        "done",
        "done",
        { error: "environment_not_found" },
        { error: "invalid_argument" },
        { error: "invalid_argument" },
        ["host:ops"],
      ],
    });
    assert.deepEqual(
      (await session.read()).map((record) =>
        `${record.kind}${"environment" in record ? `:${record.environment}` : ""}`
      ),
      [
        "tool_call_started",
        "environment_created:store",
        "environment_updated:store",
        "environment_setup:ops",
        "environment_deleted:store",
        "tool_result",
        "tool_call_finished",
      ],
    );
  },
  () => {
    api = serve((request) => {
      const [, version, , id] = new URL(request.url).pathname.split("/");
      return Response.json({ version: Number(version.slice(1)), id });
    });
    return { allow: { net: [api.host] } };
  },
);
