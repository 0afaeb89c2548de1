import assert from "node:assert/strict";
import { z } from "zod";
import { fetchIssue } from "../../examples/fetch_issue.ts";
import { Brain, type BrainError, type Descriptor, type Environment, hostEnv, http, tool } from "../../mod.ts";
import type { Dispatch } from "../../src/contract/placement.ts";
import { factoryImplementation } from "../../src/tool/tool.ts";
import { hasCode } from "../_support/has_code.ts";

async function withBrain(fn: (brain: Brain) => Promise<void>): Promise<void> {
  await using brain = new Brain();
  await fn(brain);
}

Deno.test("input JSON Schema describes what parsing accepts; output JSON Schema the parsed output", () => {
  const search = tool({
    name: "search",
    description: "Search.",
    input: z.object({ query: z.string().transform((query) => query.trim()), limit: z.number().default(10) }),
    output: z.object({ count: z.string().transform(Number).pipe(z.number()), at: z.string().default("now") }),
    run: (_input, ctx) => ctx.finish({ count: "1" }),
  });
  assert.deepEqual(search.inputSchema.required, ["query"]);
  assert.deepEqual(search.inputSchema.properties, {
    query: { type: "string" },
    limit: { type: "number", default: 10 },
  });
  assert.deepEqual(search.outputSchema?.properties, {
    count: { type: "number" },
    at: { type: "string", default: "now" },
  });
  assert.deepEqual(search.outputSchema?.required, ["count", "at"]);
});

Deno.test("the handler receives parsed input: defaults filled in and transforms applied", async () => {
  const seen: unknown[] = [];
  const search = tool({
    name: "search",
    description: "Search.",
    input: z.object({ query: z.string().transform((query) => query.trim()), limit: z.number().default(10) }),
    run: (input, ctx) => (seen.push(input), ctx.finish(null)),
  });
  await withBrain(async (brain) => {
    const session = await brain.sessions.create({ tools: [search()] });
    await session.call("search", { query: "  ada  " });
    await session.call("search", { query: "x", limit: 2 });
    assert.deepEqual(seen, [{ query: "ada", limit: 10 }, { query: "x", limit: 2 }]);
    const [started] = await session.read();
    assert.deepEqual(
      started.kind === "tool_call_started" && started.input,
      { query: "  ada  " },
      "the journal keeps the raw input",
    );
  });
});

Deno.test("input JSON Schema admits extra properties for z.object and forbids them for z.strictObject", () => {
  const input = (schema: z.ZodType) =>
    tool({ name: "t", description: "A test Tool.", input: schema, run: (_i, ctx) => ctx.finish() }).inputSchema;
  assert.equal(input(z.object({ id: z.string() })).additionalProperties, undefined);
  assert.equal(input(z.strictObject({ id: z.string() })).additionalProperties, false);
});

Deno.test("unrepresentable schemas fail when the Tool is declared", () => {
  for (const [input, output] of [[z.object({ n: z.bigint() }), undefined], [z.object({}), z.date()]] as const) {
    assert.throws(
      () => tool({ name: "bad", description: "A test Tool.", input, output, run: (_i, ctx) => ctx.finish() }),
      hasCode("invalid_schema"),
    );
  }
});

Deno.test("z.object strips extra input properties; z.strictObject rejects them", async () => {
  const seen: unknown[] = [];
  const loose = tool({
    name: "loose",
    description: "A test Tool.",
    input: z.object({ id: z.string() }),
    run: (input, ctx) => (seen.push(input), ctx.finish(input)),
  });
  const strict = tool({
    name: "strict",
    description: "A test Tool.",
    input: z.strictObject({ id: z.string() }),
    run: (input, ctx) => ctx.finish(input),
  });
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [loose(), strict()] });
  const stripped = await session.call("loose", { id: "1", extra: true });
  assert.deepEqual(stripped.outcome, { status: "ok", value: { id: "1" } });
  assert.deepEqual(seen, [{ id: "1" }]);
  const rejected = await session.call("strict", { id: "1", extra: true });
  assert.equal(rejected.outcome.status, "error");
  assert.equal(rejected.outcome.status === "error" && rejected.outcome.error.code, "invalid_input");
});

Deno.test("factory options are parsed once, with defaults and transforms, and frozen", () => {
  let parses = 0;
  const lookup = tool({
    name: "lookup",
    description: "A test Tool.",
    input: z.object({}),
    options: z.object({
      prefix: z.string().transform((prefix) => (parses++, prefix.toUpperCase())),
      nested: z.object({ n: z.number() }).default({ n: 1 }),
    }),
    run: (_input, ctx) => ctx.finish(),
  });
  const placed = lookup({ prefix: "customer:" });
  assert.deepEqual(placed.options, { prefix: "CUSTOMER:", nested: { n: 1 } });
  assert.equal(parses, 1);
  assert.ok(Object.isFrozen(placed.options) && Object.isFrozen(placed.options.nested));
  assert.throws(() => lookup({ prefix: 7 as unknown as string }), hasCode("invalid_options"));
});

Deno.test("without an options schema the factory takes no options; env places it", () => {
  const ping = tool({
    name: "ping",
    description: "A test Tool.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish(),
  });
  assert.deepEqual(ping().options, {});
  assert.equal(ping().env, undefined);
  const app = hostEnv({ name: "app" });
  const placed = ping({ env: app });
  assert.equal(placed.env, app);
  assert.equal(placed.advertised.env, "app");
  assert.throws(() => ping({ verbose: true } as never), hasCode("invalid_options"));
});

Deno.test("a declaration needs a valid name and exactly one of run or implementation", () => {
  const input = z.object({});
  assert.throws(
    () => tool({ name: "has space", description: "A test Tool.", input, run: () => {} }),
    hasCode("invalid_tool"),
  );
  assert.throws(() => tool({ name: "none", description: "A test Tool.", input }), hasCode("invalid_tool"));
  assert.throws(
    () =>
      tool({ name: "both", description: "A test Tool.", input, run: () => {}, implementation: () => ({ type: "x" }) }),
    hasCode("invalid_tool"),
  );
});

Deno.test("a declaration has no needs field: unknown declaration fields are invalid_tool", () => {
  const declaration = {
    name: "deps",
    description: "A test Tool.",
    input: z.object({}),
    run: () => {},
    needs: ["npm:left-pad"],
  };
  assert.throws(
    () => tool(declaration as never),
    (error) => hasCode("invalid_tool")(error) && /unknown declaration field needs/.test((error as Error).message),
  );
});

Deno.test("a descriptor is built from parsed options, frozen, and needs an Environment that interprets it", async () => {
  const placed = fetchIssue({ repository: "aexhq/brain" });
  const descriptor = (placed.implementation as unknown as { descriptor: Record<string, unknown> }).descriptor;
  assert.deepEqual(descriptor, { type: "http_json", method: "GET", path: "/repos/aexhq/brain/issues/{number}" });
  assert.ok(Object.isFrozen(descriptor));
  assert.equal(placed.advertised.implementation, "descriptor");
  const brain = new Brain();
  try {
    await assert.rejects(brain.sessions.create({ tools: [placed] }), hasCode("unsupported_runtime"));
    await assert.rejects(
      brain.sessions.create({ tools: [fetchIssue({ env: hostEnv({ name: "app" }), repository: "a/b" })] }),
      hasCode("unsupported_runtime"),
    );
  } finally {
    await brain.close();
  }
  assert.throws(
    () =>
      tool({
        name: "bad_descriptor",
        description: "A test Tool.",
        input: z.object({}),
        implementation: () => ({ type: "x", at: new Date() } as never),
      })(),
    hasCode("invalid_tool"),
  );
});

Deno.test("Brain keeps a descriptor opaque and hands the same one to its Environment with every invoke", async () => {
  const seen: { descriptor: Descriptor; input: unknown }[] = [];
  const queue: Environment = {
    name: "queue",
    kind: "queue",
    describe: () => ({ kind: "queue", name: "queue" }),
    interpret(descriptor: Descriptor, dispatch: Dispatch) {
      seen.push({ descriptor, input: dispatch.invocation.input });
      void dispatch.sink.finish({ outcome: { status: "ok", value: descriptor.topic } });
    },
  };
  const publish = tool({
    name: "publish",
    description: "Publish to a queue.",
    input: z.object({ text: z.string() }),
    options: z.object({ topic: z.string() }),
    implementation: ({ topic }) => ({ type: "queue_publish", topic, nested: { anything: [1, "two", null] } }),
  });
  const brain = new Brain();
  try {
    const session = await brain.sessions.create({ tools: [publish({ env: queue, topic: "orders" })] });
    for (const text of ["a", "b"]) {
      assert.deepEqual((await session.call("publish", { text })).outcome, { status: "ok", value: "orders" });
    }
  } finally {
    await brain.close();
  }
  assert.deepEqual(seen.map(({ input }) => input), [{ text: "a" }, { text: "b" }]);
  assert.equal(seen[0].descriptor, seen[1].descriptor, "one frozen descriptor per placement");
  assert.deepEqual(seen[0].descriptor, {
    type: "queue_publish",
    topic: "orders",
    nested: { anything: [1, "two", null] },
  });
  assert.ok(Object.isFrozen((seen[0].descriptor.nested as { anything: unknown[] }).anything));
});

Deno.test("an application function runs in the application's process: its state, working directory and permissions", async () => {
  const appState = { lookups: 0 };
  const inspectApp = tool({
    name: "inspect_app",
    description: "Reports what the function sees of its process.",
    input: z.object({}),
    run: async (_input, ctx) => {
      appState.lookups++;
      return ctx.finish({
        cwd: Deno.cwd(),
        config: JSON.parse(await Deno.readTextFile("deno.json")).name,
        write: (await Deno.permissions.query({ name: "write", path: ".tmp" })).state,
      });
    },
  });
  await withBrain(async (brain) => {
    const session = await brain.sessions.create({ tools: [inspectApp()] });
    const end = await session.call("inspect_app", {});
    assert.deepEqual(end.outcome, {
      status: "ok",
      value: {
        cwd: Deno.cwd(),
        config: "@aexhq/brain",
        write: "granted",
      },
    });
    assert.equal(appState.lookups, 1, "the function changed the application's own state");
    assert.equal(session.workspace("app"), undefined, "creating the session gave it no workspace");
  });
});

Deno.test("a Tool placed with a named hostEnv and options runs in the application with those options", async () => {
  const lookup = tool({
    name: "lookup",
    description: "Look up one record.",
    input: z.object({ id: z.string() }),
    options: z.object({ prefix: z.string() }),
    run: ({ id }, ctx) => ctx.finish(`${ctx.options.prefix}${id}`),
  });
  const placed = lookup({ env: hostEnv({ name: "app" }), prefix: "customer:" });
  assert.deepEqual(placed.options, { prefix: "customer:" }, "env is not an option");
  await withBrain(async (brain) => {
    const session = await brain.sessions.create({ tools: [placed] });
    assert.deepEqual((await session.call("lookup", { id: "7" })).outcome, { status: "ok", value: "customer:7" });
    assert.equal(session.workspace("app"), undefined);
    assert.equal((await brain.sessions.list())[0].tools[0].env, "app");
  });
});

Deno.test("factoryImplementation recognises only factories made by tool(), with their kind", () => {
  const input = z.object({});
  const host = tool({ name: "host_tool", description: "Host.", input, run: (_input, ctx) => ctx.finish(null) });
  const described = tool({
    name: "described",
    description: "Descriptor.",
    input,
    implementation: () => ({ type: "http_json", method: "GET", path: "/" }),
  });
  const endpoint = http("https://example.com/score");
  const remote = tool({ name: "remote", description: "HTTP.", input, implementation: endpoint });
  assert.deepEqual(factoryImplementation(host), { kind: "host", implementation: undefined });
  assert.deepEqual(factoryImplementation(described), { kind: "descriptor", implementation: undefined });
  assert.equal(factoryImplementation(remote)?.implementation, endpoint);
  assert.equal(factoryImplementation(remote)?.kind, "http");
  const lookAlike = Object.defineProperties(() => undefined, Object.getOwnPropertyDescriptors(host));
  assert.equal(factoryImplementation(lookAlike), undefined);
  assert.equal(factoryImplementation(host()), undefined);
  assert.equal(factoryImplementation(null), undefined);
});

Deno.test("an empty or blank description is invalid_tool, saying what the description is for", () => {
  for (const description of ["", "  \n"]) {
    assert.throws(
      () => tool({ name: "vague", description, input: z.object({}), run: (_input, ctx) => ctx.finish() }),
      (error: BrainError) => {
        assert.equal(error.code, "invalid_tool");
        assert.equal(
          error.message,
          "tool vague: give it a description, the text a model reads to decide when to call it",
        );
        return true;
      },
    );
  }
});

Deno.test("an input schema that is not one object is invalid_schema, naming z.object", () => {
  const inputs: [z.ZodType, RegExp][] = [
    [z.string(), /its input schema has type string; models call a Tool with named arguments/],
    [z.array(z.number()), /its input schema has type array/],
    [z.union([z.object({ a: z.string() }), z.string()]), /its input schema has a schema that is not one object/],
  ];
  for (const [input, message] of inputs) {
    assert.throws(
      () => tool({ name: "scalar", description: "Takes a scalar.", input, run: (_input, ctx) => ctx.finish() }),
      (error: BrainError) => {
        assert.equal(error.code, "invalid_schema");
        assert.match(error.message, message);
        assert.match(error.message, /declare input as z\.object\(\{ \.\.\. \}\)$/);
        return true;
      },
    );
  }
  for (const input of [z.object({}), z.record(z.string(), z.number()), z.unknown()]) {
    const accepted = tool({ name: "fine", description: "Takes an object.", input, run: (_input, ctx) => ctx.finish() });
    assert.ok(accepted.inputSchema);
  }
});

Deno.test("a zod 3 schema is invalid_schema, naming zod 4 and how to add it", async () => {
  const { z: z3 } = await import("zod3");
  const cases = [
    { input: z3.object({ id: z3.string() }) },
    { input: z.object({}), output: z3.string() },
    { input: z.object({}), options: z3.object({ prefix: z3.string() }) },
  ];
  for (const schemas of cases) {
    assert.throws(
      () => tool({ name: "old", description: "Uses zod 3.", ...schemas, run: () => undefined } as never),
      (error: BrainError) => {
        assert.equal(error.code, "invalid_schema");
        assert.match(
          error.message,
          /^tool old: its (input|output|options) schema is a zod 3 schema; Brain needs zod 4: /,
        );
        assert.match(error.message, /run deno add npm:zod@4 and import \{ z \} from "zod"$/);
        return true;
      },
    );
  }
});
