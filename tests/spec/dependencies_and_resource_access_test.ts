import assert from "node:assert/strict";
import { z } from "zod";
import { brainEnv, BrainError, type BrainSession, hostEnv, http, httpEnv, ok, tool } from "../../mod.ts";
import { serve } from "../_support/serve.ts";
import type { Implementation } from "../../src/env/mod.ts";
import { hasCode, specTest } from "./_brains.ts";
import { probeTool } from "../_support/components.ts";

specTest(
  "preparation finishes before any call's entrypoint, also for calls that arrive together, and runs once",
  async (brain) => {
    let setups = 0;
    let ready = false;
    const started = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const app = hostEnv({
      name: "app",
      setup: async () => {
        setups++;
        started.resolve();
        await release.promise;
        ready = true;
      },
    });
    const probe = tool({
      name: "probe",
      description: "Reports whether preparation had finished.",
      input: z.object({}),
      run: (_input, ctx) => ctx.finish({ ready }),
    });
    const creating = brain.sessions.create({ tools: [probe({ env: app })] });
    // Preparation may run when the session is created or before its first call: hold it either way.
    const first = await Promise.race([creating, started.promise]);
    if (first === undefined) release.resolve();
    const session: BrainSession = await creating;
    const calls = await Promise.all([1, 2, 3].map(() => session.start("probe", {})));
    release.resolve();
    for (const call of calls) assert.deepEqual((await call.ended).outcome, ok({ ready: true }));
    assert.equal(setups, 1);
  },
);

specTest(
  "an implementation that refuses admission fails session creation explicitly, with a BrainError naming the Tool",
  async (brain) => {
    const refusing = (admit: () => Promise<void>): Implementation => ({ kind: "http", admit, execute: () => {} });
    const bugs = {
      throws: refusing(() => {
        throw new TypeError("no runtime here");
      }),
      rejects: refusing(() => Promise.reject(new TypeError("no runtime here"))),
      denies: refusing(() => Promise.reject(new BrainError("unsupported_runtime", "no runtime here"))),
    };
    for (const [name, implementation] of Object.entries(bugs)) {
      const declared = tool({ name, description: "Refused.", input: z.object({}), implementation });
      await assert.rejects(
        (async () => await brain.sessions.create({ tools: [declared()] }))(),
        (error) =>
          error instanceof BrainError && error.code === (name === "denies" ? "unsupported_runtime" : "invalid_tool") &&
          error.message.includes(name === "denies" ? "no runtime here" : `tool ${name}`),
        name,
      );
    }
    assert.deepEqual(await brain.sessions.list(), []);
  },
);

Deno.test("there is no universal needs declaration: a Tool or an Environment that declares one is refused", () => {
  const base = { name: "t", description: "Needs something.", input: z.object({}), run: () => undefined };
  assert.throws(
    () => tool({ ...base, needs: ["npm:left-pad"] } as never),
    (error) => error instanceof BrainError && error.code === "invalid_tool" && /needs/.test(error.message),
  );
  for (
    const declare of [
      () => hostEnv({ name: "app", needs: ["x"] } as never),
      () => brainEnv({ name: "r", needs: ["x"] } as never),
    ]
  ) {
    assert.throws(declare, (error) => error instanceof BrainError && error.code === "invalid_argument");
  }
});

specTest(
  "a run function placed in a binding it would run outside of (a granted brainEnv, an httpEnv) is unsupported_runtime at creation, never run",
  async (brain) => {
    let ran = 0;
    const lookup = tool({
      name: "lookup",
      description: "Runs in the application.",
      input: z.object({}),
      run: (_input, ctx) => (ran++, ctx.finish(null)),
    });
    const reader = brainEnv({ name: "reader", filesystem: { workspace: "read" } });
    const api = httpEnv({ name: "api", baseUrl: "http://127.0.0.1:1" });
    for (const env of [reader, api]) {
      await assert.rejects(
        (async () => await brain.sessions.create({ tools: [lookup({ env })] }))(),
        (error) =>
          error instanceof BrainError && error.code === "unsupported_runtime" && error.message.includes("lookup") &&
          error.message.includes(env.name),
        env.name,
      );
    }
    assert.equal(ran, 0);
    assert.deepEqual(await brain.sessions.list(), []);
    // A binding that grants nothing beyond Environment control leaves the function nothing to escape.
    const controller = brainEnv({ name: "controller", control: ["list"] });
    for (const env of [hostEnv({ name: "app" }), controller]) {
      const session = await brain.sessions.create({ tools: [lookup({ env })] });
      assert.deepEqual((await session.call("lookup", {})).outcome, ok(null));
    }
  },
  { allow: { workspaceRoot: ".tmp/ws-spec", filesystem: ["read"], net: ["127.0.0.1:1"] } },
);

let endpoint: ReturnType<typeof serve> & { readonly requests: number };
specTest(
  "a v1 http() Tool placed in an Environment whose grant would not apply to it is unsupported_runtime at creation, never sent",
  async (brain) => {
    await using server = endpoint;
    const score = tool({
      name: "score",
      description: "Scores remotely.",
      input: z.object({}),
      implementation: http(`${server.url}/score`),
    });
    const narrow = brainEnv({ name: "narrow", net: ["a.test"] });
    const api = httpEnv({ name: "api", baseUrl: server.url });
    for (const env of [narrow, api]) {
      await assert.rejects(
        (async () => await brain.sessions.create({ tools: [score({ env })] }))(),
        (error) =>
          error instanceof BrainError && error.code === "unsupported_runtime" && error.message.includes(env.name),
        env.name,
      );
    }
    assert.equal(server.requests, 0);
    assert.deepEqual(await brain.sessions.list(), []);
    for (const placed of [score(), score({ env: hostEnv({ name: "app" }) })]) {
      const session = await brain.sessions.create({ tools: [placed] });
      assert.deepEqual((await session.call("score", {})).outcome, ok({ score: 1 }));
    }
  },
  () => {
    let requests = 0;
    const server = serve(() => (requests++, Response.json({ score: 1 })));
    endpoint = Object.assign(server, {
      get requests() {
        return requests;
      },
    });
    return { allow: { net: [server.host, "a.test"] } };
  },
);

specTest(
  "one binding name given different authority in one session is refused invalid_argument, whatever runs in it; the same authority under one name is one binding",
  async (brain) => {
    const reader = brainEnv({ name: "b", filesystem: { workspace: "read" } });
    const plain = tool({
      name: "plain",
      description: "Runs here.",
      input: z.object({}),
      run: (_i, ctx) => ctx.finish("here"),
    });
    const mixes = [
      [probeTool("echo")({ env: reader }), plain({ env: hostEnv({ name: "b" }) })],
      [plain({ env: hostEnv({ name: "b" }) }), probeTool("echo")({ env: reader })],
      [probeTool("echo")({ env: reader }), probeTool("spin")({ env: brainEnv({ name: "b" }) })],
    ];
    for (const tools of mixes) {
      await assert.rejects(
        (async () => await brain.sessions.create({ tools }))(),
        hasCode("invalid_argument"),
        tools.map((placed) => `${placed.tool.name} in ${placed.env?.kind}`).join(", "),
      );
    }
    assert.deepEqual(await brain.sessions.list(), []);
    const again = brainEnv({ name: "b", filesystem: { workspace: "read" } });
    const session = await brain.sessions.create({
      tools: [probeTool("echo")({ env: reader }), probeTool("spin")({ env: again })],
    });
    assert.deepEqual((await session.call("echo", { status: "ok", value: 1 })).outcome, ok(1));
  },
  { allow: { workspaceRoot: ".tmp/ws-spec", filesystem: ["read"] } },
);
