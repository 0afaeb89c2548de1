import assert from "node:assert/strict";
import { z } from "zod";
import {
  Brain,
  brainEnv,
  BrainError,
  type BrainErrorCode,
  fail,
  hostEnv,
  http,
  httpEnv,
  openAICompatible,
  tool,
  type ToolContext,
} from "../../mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { embeddedSession } from "../_support/embedded_session.ts";
import { hasCode } from "../_support/has_code.ts";
import { callRecords } from "../_support/call_records.ts";
import { handoff } from "../_support/handoff.ts";
import { trap } from "../_support/trap.ts";

const getter = () => ({
  get x() {
    throw new RangeError("getter");
  },
});

/** Runs `attempt` and returns the code of the BrainError it threw or rejected with; fails on anything else. */
async function codeOf(attempt: () => unknown): Promise<BrainErrorCode> {
  let thrown: unknown;
  try {
    await attempt();
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown !== undefined, "it was accepted");
  assert.ok(hasCode((thrown as { code: BrainErrorCode }).code)(thrown), `not a BrainError: ${thrown}`);
  return (thrown as { code: BrainErrorCode }).code;
}

const base = { name: "t", description: "d", input: z.object({}), run: () => {} };
const trapped = (): never => {
  throw new Error("get trap");
};
const revoked = () => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
};

Deno.test("hostile tool(): unreadable declarations, non-zod schemas and non-functions are refused with a code", async () => {
  const cases: [string, () => unknown, BrainErrorCode][] = [
    ["a Proxy declaration", () => tool(trap() as never), "invalid_tool"],
    ["a throwing name getter", () =>
      tool({
        ...base,
        get name(): string {
          throw new Error("name");
        },
      }), "invalid_tool"],
    ["run: 5", () => tool({ ...base, run: 5 as never }), "invalid_tool"],
    ["implementation: 5", () => tool({ ...base, run: undefined, implementation: 5 as never }), "invalid_tool"],
    ["implementation: {}", () => tool({ ...base, run: undefined, implementation: {} as never }), "invalid_tool"],
    ["a look-alike input schema", () => tool({ ...base, input: { _zod: {} } as never }), "invalid_schema"],
    ["a look-alike options schema", () => tool({ ...base, options: { _zod: { run: 1 } } as never }), "invalid_schema"],
    ["a Proxy input schema", () => tool({ ...base, input: trap() as never }), "invalid_schema"],
    ["a bigint input field", () => tool({ ...base, input: z.object({ b: z.bigint() }) }), "invalid_schema"],
    ["a default that throws null as its schema is exported", () =>
      tool({
        ...base,
        input: z.object({
          n: z.number().default(() => {
            throw null;
          }),
        }),
      }), "invalid_schema"],
    ["a BigInt name", () => tool({ ...base, name: 1n as never }), "invalid_tool"],
    ["a name whose toJSON throws", () =>
      tool({
        ...base,
        name: {
          toJSON() {
            throw new Error("toJSON");
          },
        } as never,
      }), "invalid_tool"],
    ["a cyclic name", () => {
      const name: Record<string, unknown> = {};
      name.self = name;
      return tool({ ...base, name: name as never });
    }, "invalid_tool"],
    ["a revoked Proxy declaration", () => tool(revoked() as never), "invalid_tool"],
    ["a revoked Proxy input schema", () => tool({ ...base, input: revoked() as never }), "invalid_schema"],
    ["a revoked Proxy placement", () => tool(base)(revoked() as never), "invalid_options"],
    ["fail with a Proxy code", () => fail(trap() as never, "m"), "invalid_argument"],
    ["fail with a prototype-less code", () => fail(Object.create(null), "m"), "invalid_argument"],
    ["fail with Proxy extras", () => fail("c", "m", trap() as never), "invalid_argument"],
  ];
  for (const [what, attempt, code] of cases) assert.equal(await codeOf(attempt), code, what);
});

Deno.test("hostile placement: throwing options schemas, descriptor functions and environments fail as codes", async () => {
  const withOptions = (options: z.ZodType) => tool({ ...base, options });
  const described = (implementation: () => unknown) =>
    tool({ ...base, run: undefined, implementation: implementation as never });
  const cases: [string, () => unknown, BrainErrorCode][] = [
    ["a throwing transform", () =>
      withOptions(
        z.object({}).transform(() => {
          throw new Error("transform");
        }),
      )({}), "invalid_options"],
    ["a refinement throwing TypeError", () =>
      withOptions(
        z.object({}).refine(() => {
          throw new TypeError("refine");
        }),
      )({}), "invalid_options"],
    ["an async refinement", () => withOptions(z.object({}).refine(() => Promise.resolve(true)))({}), "invalid_options"],
    ["a Proxy placement", () => tool(base)(trap() as never), "invalid_options"],
    ["a getter placement", () => tool(base)(getter() as never), "invalid_options"],
    ["a Proxy env", () => tool(base)({ env: trap() as never }), "invalid_options"],
    ["env: 5", () => tool(base)({ env: 5 as never }), "invalid_options"],
    ["a descriptor function that throws", () =>
      described(() => {
        throw new Error("descriptor");
      })(), "invalid_tool"],
    ["a Proxy descriptor", () => described(() => trap())(), "invalid_tool"],
    ["a descriptor holding a bigint", () => described(() => ({ type: "x", n: 1n }))(), "invalid_tool"],
  ];
  for (const [what, attempt, code] of cases) assert.equal(await codeOf(attempt), code, what);
});

Deno.test("hostile Brain options: unreadable, malformed or unbounded options are refused before anything opens", async () => {
  const cases: [string, () => unknown][] = [
    ["a Proxy", () => new Brain(trap() as never)],
    ["a getter", () => new Brain(getter() as never)],
    ["journal: {}", () => new Brain({ journal: {} as never })],
    ["journal: 5", () => new Brain({ journal: 5 as never })],
    ["allow: Proxy", () => new Brain({ allow: trap() as never })],
    ["allow.net: 5", () => new Brain({ allow: { net: 5 } as never })],
    ["allow.filesystem: exec", () => new Brain({ allow: { filesystem: ["exec"] } as never })],
    ["models: Proxy", () => new Brain({ models: trap() as never })],
    ["components: Proxy", () => new Brain({ components: trap() as never })],
    ["components.cacheDir with a lone surrogate", () => new Brain({ components: { cacheDir: ".tmp/\ud800" } })],
    ["components.cacheDir with NUL", () => new Brain({ components: { cacheDir: ".tmp/a\0b" } })],
    ["maxEmittedBytes: -1", () => new Brain({ maxEmittedBytes: -1 })],
    ["maxModelCalls: NaN", () => new Brain({ maxModelCalls: NaN })],
    ["leaseMs: 1e300 (a timer that would fire at once, forever)", () => new Brain({ leaseMs: 1e300 })],
    ["Brain.open of a Proxy", () => Brain.open(trap() as never)],
    [
      "a remote Brain's allow: Proxy",
      () => new Brain({ url: "http://127.0.0.1:1", token: "t", allow: trap() as never }),
    ],
  ];
  for (const [what, attempt] of cases) assert.equal(await codeOf(attempt), "invalid_argument", what);
  await using brain = new Brain();
  for (const options of [trap(), { operatorToken: 5 }, { operatorToken: "" }]) {
    assert.equal(await codeOf(() => brain.viewer(options as never)), "invalid_argument");
  }
});

Deno.test("hostile session options: Proxies and getters in create and get options fail as codes, storing nothing", async () => {
  await using brain = new Brain();
  const model = { provider: new ScriptedProvider([]), model: "m" };
  const cases: [string, Record<string, unknown>][] = [
    ["tools: [Proxy]", { tools: [trap()] }],
    ["host: Proxy", { host: trap() }],
    ["host: getter", { host: getter() }],
    ["model: Proxy", { model: trap() }],
    ["agentloop: Proxy", { model, agentloop: trap() }],
    ["agentloop.system: 5", { model, agentloop: { system: 5 } }],
    ["agentloop.toolDeadlineMs: 1e300", { model, agentloop: { toolDeadlineMs: 1e300 } }],
    ["environments: Proxy", { environments: trap() }],
    ["environments: [Proxy]", { environments: [trap()] }],
    ["environments: a revoked Proxy", { environments: revoked() }],
    ["tools: a revoked Proxy", { tools: revoked() }],
    ["tools: a Proxy list whose items throw", { tools: new Proxy([1], { get: () => trapped() }) }],
  ];
  for (const [what, options] of cases) {
    const code = await codeOf(() => brain.sessions.create(options));
    assert.ok(code === "invalid_argument" || code === "invalid_tool", `${what}: ${code}`);
  }
  assert.equal(await codeOf(() => brain.sessions.create(trap() as never)), "invalid_argument");
  assert.equal(await codeOf(() => brain.sessions.get("x", trap() as never)), "invalid_argument");
  assert.equal(await codeOf(() => brain.sessions.get("x", { host: trap() } as never)), "invalid_argument");
  assert.deepEqual(await brain.sessions.list(), [], "no refused session was stored");
});

Deno.test("hostile session names: __proto__, constructor and toString are ordinary names", async () => {
  const named = (name: string) => tool({ ...base, name, run: (_input, ctx) => ctx.finish(name) });
  await using brain = new Brain();
  const names = ["__proto__", "constructor", "toString", "hasOwnProperty"];
  const session = await brain.sessions.create({ id: "__proto__", tools: names.map((name) => named(name)()) });
  for (const name of names) assert.deepEqual((await session.call(name, {})).outcome, { status: "ok", value: name });
  assert.equal((await brain.sessions.get("__proto__")).id, "__proto__");
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

Deno.test("hostile call arguments: input and options that are not data fail before anything is committed", async () => {
  const echo = tool({ ...base, name: "echo", input: z.unknown(), run: (input, ctx) => ctx.finish(input as never) });
  await using session = await embeddedSession([echo()]);
  const cases: [string, unknown, unknown, BrainErrorCode][] = [
    ["a Proxy input", trap(), undefined, "invalid_input"],
    ["a getter input", getter(), undefined, "invalid_input"],
    ["a Proxy options", {}, trap(), "invalid_argument"],
    ["a getter options", {}, getter(), "invalid_argument"],
    ["signal: {}", {}, { signal: {} }, "invalid_argument"],
    ["signal: Proxy", {}, { signal: trap() }, "invalid_argument"],
    ["activation: {}", {}, { activation: {} }, "invalid_argument"],
    ["toolCallId: 5", {}, { toolCallId: 5 }, "invalid_argument"],
    ["toolCallId of 10 MB", {}, { toolCallId: "x".repeat(10_000_000) }, "invalid_argument"],
    ["traceparent of 1 MB", {}, { traceparent: "x".repeat(1_000_000) }, "invalid_argument"],
    ["deadline: NaN", {}, { deadline: NaN }, "invalid_argument"],
    ["deadline: -Infinity", {}, { deadline: -Infinity }, "invalid_argument"],
    ["deadline: 1e300", {}, { deadline: 1e300 }, "invalid_argument"],
    ["timeoutMs: 1e300", {}, { timeoutMs: 1e300 }, "invalid_argument"],
    ["timeoutMs: -1", {}, { timeoutMs: -1 }, "invalid_argument"],
  ];
  for (const [what, input, options] of cases) {
    assert.equal(
      await codeOf(() => session.call("echo", input as never, options as never)),
      cases.find((c) => c[0] === what)![3],
      what,
    );
  }
  assert.deepEqual(await session.read(), [], "nothing was committed");
  for (const options of [trap(), { from: NaN }, { limit: -1 }, { from: "1" }, { after: 1 }]) {
    assert.equal(await codeOf(() => session.read(options as never)), "invalid_argument");
  }
  for (const options of [trap(), { signal: {} }, { from: -1 }]) {
    assert.equal(await codeOf(() => session.records(options as never)), "invalid_argument");
  }
});

Deno.test("hostile call options: a huge timeout still waits for the Tool (no timer overflow)", async () => {
  const slow = tool({
    ...base,
    name: "slow",
    run: async (_input, ctx) => {
      await ctx.emit("started");
      await new Promise((resolve) => setTimeout(resolve, 50));
      return ctx.finish("done");
    },
  });
  await using session = await embeddedSession([slow()]);
  const end = await session.call("slow", {}, { timeoutMs: 2 ** 31 + 5 });
  assert.deepEqual(end.outcome, { status: "ok", value: "done" });
});

/** Tools that misuse ctx or return hostile values, with the outcome code each call must end with. */
const misuse: [string, (ctx: ToolContext<never, never>) => unknown, string][] = [
  ["throws an object whose toString throws", () => {
    throw {
      toString() {
        throw new Error("toString");
      },
    };
  }, "tool_error"],
  ["throws a Proxy", () => {
    throw trap();
  }, "tool_error"],
  ["throws a 20 MB message", () => {
    throw new Error("x".repeat(20_000_000));
  }, "tool_error"],
  ["throws an Error whose message getter throws", () => {
    const error = new Error("m");
    Object.defineProperty(error, "message", {
      get() {
        throw new Error("message");
      },
    });
    throw error;
  }, "tool_error"],
  ["finishes a Proxy", (ctx) => ctx.finish(trap() as never), "invalid_output"],
  ["finishes a getter", (ctx) => ctx.finish(getter() as never), "invalid_output"],
  // Brain reads what run returned; a value it cannot read is no output (tests/hostile/returned_values_test.ts).
  ["returns a Proxy", () => trap(), "invalid_output"],
  ["finishes an object with a toJSON that throws", (ctx) =>
    ctx.finish({
      toJSON() {
        throw new Error("toJSON");
      },
    } as never), "invalid_output"],
  ["finishes a BigInt", (ctx) => ctx.finish(1n as never), "invalid_output"],
  [
    "finishes an error outcome with Proxy details",
    (ctx) => ctx.finish({ status: "error", error: { code: "x", message: "m", details: trap() } } as never),
    "invalid_output",
  ],
  ["emits Proxy data", async (ctx) => {
    await ctx.emit("kind", trap() as never);
  }, "tool_error"],
  ["emits a kind of 100 000 characters", async (ctx) => {
    await ctx.emit("k".repeat(100_000));
  }, "tool_error"],
  ["emits 10 MB", async (ctx) => {
    await ctx.emit("kind", "x".repeat(10_000_000));
  }, "tool_error"],
  ["finishes with Proxy result options", (ctx) => ctx.finish(1 as never, trap() as never), "tool_error"],
];

Deno.test("hostile Tools: every misuse ends its call once with a coded outcome, none stays open", async () => {
  const tools = misuse.map(([, run], index) =>
    tool({ ...base, name: `t${index}`, run: (_input, ctx) => run(ctx as never) })()
  );
  await using session = await embeddedSession(tools);
  for (const [index, [what, , code]] of misuse.entries()) {
    const end = await session.call(`t${index}`, {}, { timeoutMs: 30_000 });
    assert.equal(end.outcome.status, "error", what);
    assert.equal(end.outcome.status === "error" && end.outcome.error.code, code, what);
    const message = end.outcome.status === "error" ? end.outcome.error.message : "";
    assert.ok(message.length < 8_192, `${what}: a ${message.length}-character message was kept`);
    const terminal = (await callRecords(session, end.call)).filter((record) => record.kind === "tool_call_finished");
    assert.equal(terminal.length, 1, what);
  }
});

Deno.test("hostile ctx: after finish, a second finish is only late and emits are refused call_finished", async () => {
  const after = handoff<unknown[]>();
  const twice = tool({
    ...base,
    name: "twice",
    run: async (_input, ctx) => {
      await ctx.finish("first");
      const answers: unknown[] = [];
      for (const again of [() => ctx.finish("second"), () => ctx.emit("late"), () => ctx.emitResult("late")]) {
        answers.push(await again().then((value) => value, (error) => error.code));
      }
      after.put(answers);
    },
  });
  await using session = await embeddedSession([twice()]);
  const end = await session.call("twice", {});
  assert.deepEqual(end.outcome, { status: "ok", value: "first" });
  const [second, ...refusals] = await after.next("the answers after finish");
  assert.equal((second as { late: boolean }).late, true);
  assert.deepEqual(refusals, ["call_finished", "call_finished"]);
  const kinds = (await callRecords(session, end.call)).map((record) => record.kind);
  assert.equal(kinds.filter((kind) => kind === "tool_call_finished").length, 1);
});

Deno.test("hostile factories: Environments, endpoints and providers refuse unreadable lists, URLs and headers with codes", async () => {
  const list = () =>
    new Proxy([], {
      get: () => {
        throw new Error("get trap");
      },
    });
  const cases: [string, () => unknown, BrainErrorCode][] = [
    ["brainEnv net: a Proxy list", () => brainEnv({ name: "a", net: list() }), "invalid_argument"],
    ["brainEnv control: a Proxy list", () => brainEnv({ name: "a", control: list() }), "invalid_argument"],
    ["brainEnv filesystem: Proxy", () => brainEnv({ name: "a", filesystem: trap() as never }), "invalid_argument"],
    ["brainEnv with a function field", () => brainEnv({ name: "a", bogus: () => {} } as never), "invalid_argument"],
    ["hostEnv name: Proxy", () => hostEnv({ name: trap() as never }), "invalid_argument"],
    ["httpEnv baseUrl: Proxy", () => httpEnv({ name: "a", baseUrl: trap() as never }), "invalid_argument"],
    ["http(Proxy)", () => http(trap() as never), "invalid_tool"],
    ["http(url, Proxy)", () => http("http://127.0.0.1:1", trap() as never), "invalid_argument"],
    ["openAICompatible file: URL", () => openAICompatible({ baseUrl: "file:///etc/passwd" }), "invalid_argument"],
    [
      "openAICompatible header CRLF",
      () => openAICompatible({ baseUrl: "http://127.0.0.1:1", headers: { a: "b\r\nc: d" } }),
      "invalid_argument",
    ],
    [
      "openAICompatible timeoutMs: 1e300",
      () => openAICompatible({ baseUrl: "http://127.0.0.1:1", timeoutMs: 1e300 }),
      "invalid_argument",
    ],
  ];
  for (const [what, attempt, code] of cases) assert.equal(await codeOf(attempt), code, what);
});

Deno.test("hostile remote Brain options: listeners, host ids, flags and unbounded timers are checked before connecting", async () => {
  const remote = { url: "http://127.0.0.1:1", token: "t" };
  const cases: [string, Record<string, unknown>][] = [
    ["onConnection: 5", { onConnection: 5 }],
    ["host: Proxy", { host: trap() }],
    ["host: ../x", { host: "../x" }],
    ["takeover: yes", { takeover: "yes" }],
    ["pingIntervalMs: 1e300", { pingIntervalMs: 1e300 }],
    ["maxReconnectDelayMs: 1e300", { maxReconnectDelayMs: 1e300 }],
    ["deadlineGraceMs: 1e300", { deadlineGraceMs: 1e300 }],
  ];
  for (const [what, options] of cases) {
    assert.equal(await codeOf(() => new Brain({ ...remote, ...options } as never)), "invalid_argument", what);
  }
  await using brain = new Brain(remote);
  assert.equal(await codeOf(() => brain.sessions.create({ environments: trap() as never })), "invalid_argument");
});

Deno.test("hostile ctx: result options that are a revoked Proxy are refused invalid_argument, and the call still finishes", async () => {
  const refusing = tool({
    ...base,
    name: "refusing",
    run: async (_input, ctx) => {
      const refused = (attempt: () => Promise<unknown>) =>
        attempt().then(() => "accepted", (error) => error instanceof BrainError ? error.code : `bare ${error}`);
      const emitted = await refused(() => ctx.emitResult(1 as never, revoked() as never));
      const finished = await refused(() => ctx.finish(1 as never, revoked() as never));
      return ctx.finish({ emitted, finished } as never);
    },
  });
  await using session = await embeddedSession([refusing()]);
  const end = await session.call("refusing", {});
  assert.deepEqual(end.outcome, { status: "ok", value: { emitted: "invalid_argument", finished: "invalid_argument" } });
});
