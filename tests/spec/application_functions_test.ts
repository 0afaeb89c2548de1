import assert from "node:assert/strict";
import { z } from "zod";
import { BrainError, hostEnv, type JsonValue, ok, tool } from "../../mod.ts";
import { specTest } from "./_brains.ts";
import { lookup as exampleLookup } from "../../examples/lookup.ts";

const isCode = (code: string) => (error: unknown) => error instanceof BrainError && error.code === code;

specTest(
  "the function runs in the application's process: its state, pid, working directory and permissions",
  async (brain) => {
    const state = { calls: 0 };
    const here = tool({
      name: "here",
      description: "Reports where it runs.",
      input: z.object({}),
      run: async (_input, ctx) => {
        state.calls++;
        const read = await Deno.permissions.query({ name: "read", path: "." });
        return ctx.finish({ pid: Deno.pid, cwd: Deno.cwd(), read: read.state });
      },
    });
    const session = await brain.sessions.create({ tools: [here()] });
    const end = await session.call("here", {});
    const read = (await Deno.permissions.query({ name: "read", path: "." })).state;
    assert.deepEqual(end.outcome, ok({ pid: Deno.pid, cwd: Deno.cwd(), read }));
    assert.equal(session.workspace("app"), undefined, "no separate workspace");
    assert.equal(state.calls, 1);
  },
);

specTest("lookup({ env: hostEnv({ name }), ...options }) runs in the application with those options", async (brain) => {
  const seen: JsonValue[] = [];
  const lookup = tool({
    name: "lookup",
    description: "Looks up.",
    input: z.object({ id: z.string() }),
    options: z.object({ prefix: z.string() }),
    run: ({ id }, ctx) => (seen.push(Deno.pid), ctx.finish(`${ctx.options.prefix}${id}`)),
  });
  const session = await brain.sessions.create({
    tools: [lookup({ env: hostEnv({ name: "app" }), prefix: "customer:" })],
  });
  assert.deepEqual((await session.call("lookup", { id: "7" })).outcome, ok("customer:7"));
  assert.deepEqual(seen, [Deno.pid]);
  const [listed] = (await brain.sessions.list()).filter((meta) => meta.id === session.id);
  assert.equal(listed.tools[0].env, "app");
});

specTest(
  "the input JSON Schema (io input) makes defaulted arguments optional; the handler gets defaults and transforms",
  async (brain) => {
    const seen: unknown[] = [];
    const search = tool({
      name: "search",
      description: "Search.",
      input: z.object({
        query: z.string().transform((query) => query.trim()),
        limit: z.number().int().default(10),
      }),
      output: z.object({ count: z.number(), note: z.string().default("none") }),
      run: (input, ctx) => (seen.push(input), ctx.finish({ count: 1 })),
    });
    const session = await brain.sessions.create({ tools: [search()] });
    const [meta] = (await brain.sessions.list()).filter((listed) => listed.id === session.id);
    const [advertised] = meta.tools;
    assert.deepEqual(advertised.inputSchema.required, ["query"]);
    assert.deepEqual((advertised.inputSchema.properties as Record<string, JsonValue>).limit, {
      type: "integer",
      minimum: Number.MIN_SAFE_INTEGER,
      maximum: Number.MAX_SAFE_INTEGER,
      default: 10,
    });
    assert.deepEqual(advertised.outputSchema?.required, ["count", "note"], "output schemas describe parsed output");
    assert.deepEqual(advertised, search().advertised);
    const end = await session.call("search", { query: "  ada " });
    assert.deepEqual(end.outcome, ok({ count: 1, note: "none" }), "output defaults are applied");
    assert.deepEqual(seen, [{ query: "ada", limit: 10 }]);
  },
);

specTest(
  "z.object accepts and strips extra input properties; z.strictObject rejects them as invalid_input",
  async (brain) => {
    const seen: unknown[] = [];
    const loose = tool({
      name: "loose",
      description: "Loose.",
      input: z.object({ a: z.string() }),
      run: (input, ctx) => (seen.push(input), ctx.finish(null)),
    });
    const strict = tool({
      name: "strict",
      description: "Strict.",
      input: z.strictObject({ a: z.string() }),
      run: (input, ctx) => (seen.push(input), ctx.finish(null)),
    });
    assert.equal(loose.inputSchema.additionalProperties, undefined);
    assert.equal(strict.inputSchema.additionalProperties, false);
    const session = await brain.sessions.create({ tools: [loose(), strict()] });
    assert.equal((await session.call("loose", { a: "x", extra: 1 })).cause, "finish");
    const refused = await session.call("strict", { a: "x", extra: 1 });
    assert.deepEqual(
      [refused.cause, refused.outcome.status === "error" && refused.outcome.error.code],
      ["error", "invalid_input"],
    );
    assert.deepEqual(seen, [{ a: "x" }]);
  },
);

Deno.test("unrepresentable schemas fail with invalid_schema when the Tool is declared", () => {
  const base = { name: "bad", description: "Bad.", run: () => undefined };
  assert.throws(() => tool({ ...base, input: z.object({ at: z.date() }) }), isCode("invalid_schema"));
  assert.throws(() => tool({ ...base, input: z.object({ n: z.bigint() }) }), isCode("invalid_schema"));
  assert.throws(
    () => tool({ ...base, input: z.object({}), output: z.object({ s: z.symbol() }) }),
    isCode("invalid_schema"),
  );
  assert.throws(
    () => tool({ ...base, input: z.object({}), output: z.string().transform((text) => text.length) }),
    isCode("invalid_schema"),
  );
});

Deno.test("factory options are parsed into the Tool's own frozen copy; the caller's object is neither frozen nor shared", () => {
  const lookup = tool({
    name: "lookup",
    description: "Looks up.",
    input: z.object({}),
    options: z.object({ prefix: z.string(), meta: z.record(z.string(), z.unknown()), list: z.array(z.unknown()) }),
    run: (_input, ctx) => ctx.finish(),
  });
  const given = { prefix: "customer:", meta: { region: { name: "eu" } }, list: [{ n: 1 }] };
  const placed = lookup(given);
  assert.ok(Object.isFrozen(placed.options));
  const options = placed.options as typeof given;
  assert.ok(Object.isFrozen(options.meta) && Object.isFrozen(options.meta.region) && Object.isFrozen(options.list[0]));
  assert.equal(Object.isFrozen(given.meta.region), false, "the caller's object is not frozen");
  given.meta.region.name = "us";
  (given.list[0] as { n: number }).n = 2;
  assert.deepEqual(placed.options, { prefix: "customer:", meta: { region: { name: "eu" } }, list: [{ n: 1 }] });
});

Deno.test("factory options that are not an object, or fail their schema, are invalid_options; no schema means no options", () => {
  const lookup = tool({
    name: "lookup",
    description: "Looks up.",
    input: z.object({}),
    options: z.object({ prefix: z.string() }),
    run: (_input, ctx) => ctx.finish(),
  });
  const ping = tool({ name: "ping", description: "Pings.", input: z.object({}), run: (_input, ctx) => ctx.finish() });
  // The types refuse a placement without the required options; a caller they do not reach gets invalid_options.
  // @ts-expect-error: lookup's options schema requires a prefix
  assert.throws(() => lookup(), isCode("invalid_options"));
  assert.throws(() => lookup({ prefix: 1 } as never), isCode("invalid_options"));
  for (const bad of [null, "prefix", 7, ["a"]]) {
    assert.throws(() => lookup(bad as never), isCode("invalid_options"), String(bad));
    assert.throws(() => ping(bad as never), isCode("invalid_options"), String(bad));
  }
  assert.throws(() => ping({ verbose: true } as never), isCode("invalid_options"));
  assert.deepEqual(ping().options, {});
  assert.deepEqual(ping({}).options, {});
});

specTest(
  "an env that is not an Environment is refused with a BrainError by the time the session is created",
  async (brain) => {
    const ping = tool({ name: "ping", description: "Pings.", input: z.object({}), run: (_input, ctx) => ctx.finish() });
    for (const env of ["app", 5, {}]) {
      await assert.rejects(
        (async () => await brain.sessions.create({ tools: [ping({ env } as never)] }))(),
        (error) => error instanceof BrainError,
        String(env),
      );
    }
    assert.deepEqual(await brain.sessions.list(), []);
  },
);

Deno.test("factory options that cannot be parsed synchronously, or whose schema throws, are invalid_options", () => {
  const base = { name: "lookup", description: "Looks up.", input: z.object({}), run: () => undefined };
  const asyncCheck = tool({ ...base, options: z.object({ id: z.string().refine(async () => await true) }) });
  const throwing = tool({
    ...base,
    options: z.object({
      id: z.string().transform(() => {
        throw new Error("no");
      }),
    }),
  });
  assert.throws(() => asyncCheck({ id: "x" }), isCode("invalid_options"));
  assert.throws(() => throwing({ id: "x" }), isCode("invalid_options"));
});

Deno.test("a descriptor function that throws is invalid_tool when the Tool is placed", () => {
  const fetchIssue = tool({
    name: "fetch_issue",
    description: "Fetch one issue.",
    input: z.object({ number: z.number().int() }),
    options: z.object({ repository: z.string() }),
    implementation: ({ repository }) => {
      if (!repository.includes("/")) throw new TypeError("owner/name expected");
      return { type: "http_json", method: "GET", path: `/repos/${repository}/issues/{number}` };
    },
  });
  assert.throws(() => fetchIssue({ repository: "brain" }), isCode("invalid_tool"));
  assert.equal(fetchIssue({ repository: "aexhq/brain" }).implementation?.kind, "descriptor");
});

specTest(
  "the spec's lookup example: an event before the result, then the found record or null, each call's records dense",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [exampleLookup({ prefix: "customer:" })] });
    const found = await session.call("lookup", { id: "7" });
    const missing = await session.call("lookup", { id: "8" });
    assert.deepEqual([found.outcome, missing.outcome], [ok({ value: "Ada Lovelace" }), ok(null)]);
    const bodies = (await session.read()).map(({ sessionId, at: _at, ...body }) => {
      assert.equal(sessionId, session.id);
      return "activation" in body ? { ...body, activation: "any" } : body;
    });
    assert.deepEqual(bodies, [
      { kind: "tool_call_started", tool: "lookup", input: { id: "7" }, activation: "any", sequence: 1 },
      { kind: "tool_event", call: 1, event: "lookup_started", data: { id: "7" }, sequence: 2 },
      { kind: "tool_result", call: 1, outcome: ok({ value: "Ada Lovelace" }), sequence: 3 },
      { kind: "tool_call_finished", call: 1, cause: "finish", outcome: ok({ value: "Ada Lovelace" }), sequence: 4 },
      { kind: "tool_call_started", tool: "lookup", input: { id: "8" }, activation: "any", sequence: 5 },
      { kind: "tool_event", call: 5, event: "lookup_started", data: { id: "8" }, sequence: 6 },
      { kind: "tool_result", call: 5, outcome: ok(null), sequence: 7 },
      { kind: "tool_call_finished", call: 5, cause: "finish", outcome: ok(null), sequence: 8 },
    ]);
    assert.deepEqual([found.call, found.sequence, missing.call, missing.sequence], [1, 4, 5, 8]);
  },
);
