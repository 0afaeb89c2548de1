import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, hostEnv, type JsonValue, tool } from "../../mod.ts";
import { KvJournal } from "../../src/journal/mod.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { scratchDir } from "../_support/scratch.ts";

const dir = scratchDir("captured_values");

/** Reports four values without awaiting them, changing each object right after passing it. */
const reporter = tool({
  name: "reporter",
  description: "Emit twice, emit a result and finish, changing each value after passing it.",
  input: z.any(),
  run: async (input, ctx) => {
    const data = { n: 1 };
    const first = ctx.emit("step", data);
    data.n = 2;
    const second = ctx.emit("step", data);
    data.n = 3;
    const result = { v: 1 };
    const emitted = ctx.emitResult(result);
    result.v = 2;
    const final = { input, v: 10 };
    const finished = ctx.finish(final);
    final.v = 20;
    await Promise.all([first, second, emitted, finished]);
  },
});

const brains: [string, () => Promise<{ brain: Brain; dispose(): Promise<void> }>][] = [
  ["embedded, memory journal", () => Promise.resolve({ brain: new Brain(), dispose: () => Promise.resolve() })],
  ["embedded, kv journal", async () => ({
    brain: new Brain({ journal: await KvJournal.open(`${dir}/${crypto.randomUUID()}.kv`) }),
    dispose: () => Promise.resolve(),
  })],
  ["remote", async () => {
    const server = await serveBrain({ serverToken: "operator-secret" });
    return {
      brain: new Brain({ url: server.url, serverToken: "operator-secret", token: "captured-token" }),
      dispose: server.shutdown,
    };
  }],
];

const other = tool({
  name: "other",
  description: "Finish with nothing.",
  input: z.object({}),
  run: (_, ctx) => ctx.finish(),
});

for (const [name, open] of brains) {
  Deno.test(`${name}: sessions.create and get keep the id and tools they were passed, whatever the caller's objects do next`, async () => {
    const { brain, dispose } = await open();
    try {
      const tools = [reporter()];
      const options = { id: "as-passed", tools };
      const creating = brain.sessions.create(options);
      options.id = "changed";
      tools.push(other());
      const created = await creating;
      assert.equal(created.id, "as-passed");
      assert.deepEqual(created.tools.map((placed) => placed.tool.name), ["reporter"]);
      const end = await created.call("other", {}).catch((error) => error.code);
      assert.equal(end, "unknown_tool");
      await created.end();
      const again = [reporter()];
      const getting = brain.sessions.get("as-passed", { tools: again });
      again.push(other());
      assert.deepEqual((await getting).tools.map((placed) => placed.tool.name), ["reporter"]);
    } finally {
      await brain.close();
      await dispose();
    }
  });

  Deno.test(`${name}: a call keeps its input, events, results and finish as they were when passed, whatever the objects do next`, async () => {
    const { brain, dispose } = await open();
    try {
      const session = await brain.sessions.create({ tools: [reporter()] });
      const input = { a: 1 };
      let reads = 0;
      const fickle = {
        get b() {
          return ++reads;
        },
      };
      const pending = session.call("reporter", { input, fickle } as unknown as JsonValue);
      input.a = 99;
      const end = await pending;
      assert.deepEqual(end.outcome, { status: "ok", value: { input: { input: { a: 1 }, fickle: { b: 1 } }, v: 10 } });
      const records = await session.read();
      const [started] = records;
      assert.deepEqual(started.kind === "tool_call_started" && started.input, { input: { a: 1 }, fickle: { b: 1 } });
      assert.deepEqual(
        records.flatMap((record) =>
          record.kind === "tool_event"
            ? [record.data]
            : record.kind === "tool_result"
            ? [record.outcome as unknown]
            : []
        ),
        [{ n: 1 }, { n: 2 }, { status: "ok", value: { v: 1 } }, end.outcome],
      );
    } finally {
      await brain.close();
      await dispose();
    }
  });
}

for (const journal of ["memory", "kv"] as const) {
  Deno.test(`embedded, ${journal} journal: an Event emitted while the call's Environment change commits is the data passed`, async () => {
    const changing = tool({
      name: "changing",
      description: "Create an Environment, and emit while it commits.",
      input: z.object({}),
      run: async (_, ctx) => {
        const creating = ctx.environments.create({ kind: "http", name: "made", baseUrl: "http://127.0.0.1:1" });
        // The create's record commits a few turns after the call, once its spec is admitted.
        for (let turn = 0; turn < 3; turn++) await Promise.resolve();
        const data = { n: 1 };
        const emitted = ctx.emit("step", data);
        data.n = 2;
        await Promise.all([creating, emitted]);
        return ctx.finish();
      },
    });
    await using brain = new Brain({
      allow: { net: ["127.0.0.1:1"] },
      ...(journal === "kv" ? { journal: await KvJournal.open(`${dir}/${crypto.randomUUID()}.kv`) } : {}),
    });
    const session = await brain.sessions.create({
      tools: [changing({ env: hostEnv({ name: "ops", control: ["create"] }) })],
    });
    assert.equal((await session.call("changing", {})).outcome.status, "ok");
    const kinds = (await session.read()).map((record) =>
      record.kind === "tool_event" ? JSON.stringify(record.data) : record.kind
    );
    assert.deepEqual(kinds, ["tool_call_started", "environment_created", '{"n":1}', "tool_call_finished"]);
  });
}
