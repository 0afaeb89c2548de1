import assert from "node:assert/strict";
import { z } from "zod";
import {
  Brain,
  BRAIN_MAX_INPUT_BYTES,
  brainEnv,
  BrainError,
  type BrainErrorCode,
  component,
  hostEnv,
  type JsonValue,
  ok,
  type Outcome,
  tool,
} from "../../mod.ts";
import { serveBrain } from "../../src/host/server/mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { type JournalRecord, MemoryJournal, PostgresJournal } from "../../src/journal/mod.ts";
import { scratchDir } from "../_support/scratch.ts";
import { withDeadline } from "../_support/deadline.ts";
import { callKinds, hasCode, postgres, specTest } from "./_brains.ts";
import { type Kind, KINDS, toolKinds } from "./_kinds.ts";
import { probeTool, reader } from "../_support/components.ts";

const echo = tool({
  name: "echo",
  description: "Echoes its text.",
  input: z.object({ text: z.string() }),
  run: ({ text }, ctx) => ctx.finish(text),
});

specTest(
  "the SDK validates input: input that is not the declared object ends the call invalid_input, never running",
  async (brain) => {
    let runs = 0;
    const counted = tool({
      name: "counted",
      description: "Counts runs.",
      input: z.object({ text: z.string() }),
      run: (_input, ctx) => (runs++, ctx.finish(null)),
    });
    const session = await brain.sessions.create({ tools: [counted()] });
    for (const input of ["text", 7, null, [], { text: 1 }, {}] as JsonValue[]) {
      const end = await session.call("counted", input);
      assert.deepEqual(
        [end.cause, end.outcome.status === "error" && end.outcome.error.code],
        ["error", "invalid_input"],
        JSON.stringify(input),
      );
      assert.deepEqual(await callKinds(session, end.call), ["tool_call_started", "tool_result", "tool_call_finished"]);
    }
    assert.equal(runs, 0);
  },
);

specTest(
  "input of exactly maxInputBytes is accepted; one byte more is payload_too_large and journals nothing",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [echo()] });
    const overhead = JSON.stringify({ text: "" }).length;
    const exact = { text: "x".repeat(200 - overhead) };
    assert.equal(new TextEncoder().encode(JSON.stringify(exact)).length, 200);
    assert.deepEqual((await session.call("echo", exact)).outcome, ok(exact.text));
    const before = (await session.read()).length;
    await assert.rejects(
      session.call("echo", { text: "é".repeat(100 - overhead / 2 + 1) }),
      hasCode("payload_too_large"),
    );
    assert.equal((await session.read()).length, before);
  },
  { maxInputBytes: 200 },
);

Deno.test("BRAIN_MAX_INPUT_BYTES is the documented default of one MiB", () => {
  assert.equal(BRAIN_MAX_INPUT_BYTES, 1024 * 1024);
});

specTest(
  "bad call options are invalid_argument, non-JSON input invalid_input, and both commit nothing",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [echo()] });
    for (
      const options of [{ timeoutMs: Number.NaN }, { timeoutMs: Infinity }, { deadline: Number.NaN }, {
        deadline: "soon",
      }]
    ) {
      await assert.rejects(
        session.call("echo", { text: "x" }, options as never),
        hasCode("invalid_argument"),
        JSON.stringify(options),
      );
    }
    await assert.rejects(session.call("echo", { text: 1n } as never), hasCode("invalid_input"));
    assert.deepEqual(await session.read(), []);
    await session.call("echo", { text: "x" });
    assert.deepEqual((await session.read({ from: 2, limit: 1 })).map((record) => record.sequence), [2]);
    assert.deepEqual(await session.read({ from: 99 }), []);
  },
);

specTest("a deadline equal to now has passed: the call ends timeout without running", async (brain) => {
  let runs = 0;
  const counted = tool({
    name: "counted",
    description: "Counts runs.",
    input: z.object({}),
    run: (_input, ctx) => (runs++, ctx.finish(null)),
  });
  const session = await brain.sessions.create({ tools: [counted()] });
  const end = await session.call("counted", {}, { deadline: Date.now() });
  assert.deepEqual([end.cause, end.outcome.status, runs], ["timeout", "timeout", 0]);
});

specTest(
  "read and records refuse a range that is not one with invalid_argument, before anything is read",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [echo()] });
    await session.call("echo", { text: "x" });
    const ranges = [
      { from: -1 },
      { from: 0 },
      { from: Number.NaN },
      { from: 1.5 },
      { from: Infinity },
      { from: "1" },
      { limit: -1 },
      { limit: Number.NaN },
      { limit: 0.5 },
      { limit: "2" },
      { from: 1, limit: -5 },
      { form: 2 },
      null,
      "all",
    ];
    for (const range of ranges) {
      await assert.rejects(session.read(range as never), hasCode("invalid_argument"), JSON.stringify(range));
    }
    for (const from of [-1, 0, Number.NaN, 2.5, "1"]) {
      assert.throws(() => session.records({ from: from as never }), hasCode("invalid_argument"), String(from));
    }
    assert.deepEqual(await session.read({ from: 2, limit: 0 }), []);
    assert.deepEqual((await session.read({ from: 1, limit: 1 })).map((record) => record.sequence), [1]);
  },
);

let kinds: ReturnType<typeof toolKinds>;
specTest(
  "whatever the Tool kind, input failing its schema ends invalid_input before the placement runs and output failing it ends invalid_output, with the same outcomes and records",
  async (brain) => {
    await using _servers = kinds;
    const outcomes = new Map<Kind, Outcome[]>();
    for (const kind of KINDS) {
      const session = await brain.sessions.create({ tools: kinds.place(kind) });
      assert.deepEqual((await session.call("echo", { value: 2 })).outcome, ok(2), kind);
      const ran = kinds.runs(kind);
      const badInput = await session.call("echo", { value: "2" });
      assert.equal(kinds.runs(kind), ran, `${kind}: the placement never ran for invalid input`);
      const badOutput = await session.call("echo", { value: 1.5 });
      for (const [end, code] of [[badInput, "invalid_input"], [badOutput, "invalid_output"]] as const) {
        assert.deepEqual([end.cause, end.outcome.status === "error" && end.outcome.error.code], ["error", code], kind);
        assert.deepEqual(
          await callKinds(session, end.call),
          ["tool_call_started", "tool_result", "tool_call_finished"],
          `${kind} ${code}`,
        );
      }
      outcomes.set(kind, [badInput.outcome, badOutput.outcome]);
    }
    for (const kind of KINDS) assert.deepEqual(outcomes.get(kind), outcomes.get("in-process"), kind);
  },
  () => {
    kinds = toolKinds();
    return { allow: kinds.allow };
  },
);

specTest("a call to a Tool name the session does not have is unknown_tool and commits nothing", async (brain) => {
  const session = await brain.sessions.create({ tools: [echo()] });
  for (const name of ["ech", "Echo", "", "lookup"]) {
    await assert.rejects(session.call(name, { text: "x" }), hasCode("unknown_tool"), name);
    await assert.rejects(session.start(name, { text: "x" }), hasCode("unknown_tool"), name);
  }
  assert.deepEqual(await session.read(), []);
  assert.deepEqual((await session.call("echo", { text: "x" })).outcome, ok("x"));
});

specTest(
  "a session that ended refuses calls with session_closed; a closed Brain refuses them and new sessions, and its ended calls answer cancel with their end",
  async (brain) => {
    const ended = await brain.sessions.create({ tools: [echo()] });
    await ended.call("echo", { text: "x" });
    await ended.end();
    await assert.rejects(ended.call("echo", { text: "y" }), hasCode("session_closed"));
    assert.equal((await ended.read()).length, 3, "nothing more committed");
    const open = await brain.sessions.create({ tools: [echo()] });
    const done = await open.start("echo", { text: "z" });
    const end = await done.ended;
    await brain.close();
    await assert.rejects(open.call("echo", { text: "y" }), hasCode("session_closed"));
    await assert.rejects(brain.sessions.create({ tools: [echo()] }), hasCode("brain_closed"));
    assert.deepEqual(await done.cancel(), end, "a call that ended answers cancel with its end, even once closed");
  },
);

/** Makes each common mistake on `brain` and returns what it answered, as `code: message`, in order. */
async function mistakes(brain: Brain): Promise<string[]> {
  const answers: string[] = [];
  const answer = async (what: string, attempt: () => Promise<unknown>) => {
    const error = await (async () => await attempt())().then(() => undefined, (error) => error);
    assert.ok(error instanceof BrainError, `${what}: ${error}`);
    answers.push(`${what}: ${error.code}: ${error.message}`);
  };
  await answer("the factory", () => brain.sessions.create({ tools: [echo as never] }));
  await answer("a Tool twice", () => brain.sessions.create({ tools: [echo(), echo()] }));
  await answer("an unknown option", () => brain.sessions.create({ tools: [echo()], tool: 1 } as never));
  await answer(
    "a Component in a host Environment",
    () => brain.sessions.create({ tools: [probeTool("spin")({ env: hostEnv({ name: "app" }) })] }),
  );

  for (const id of ["", "../x", ".hidden", "x".repeat(129), 5]) {
    await answer(`create ${id}`, () => brain.sessions.create({ id: id as never, tools: [echo()] }));
    await answer(`get ${id}`, () => brain.sessions.get(id as never, { tools: [echo()] }));
    await answer(`delete ${id}`, () => brain.sessions.delete(id as never));
  }
  await answer("a missing session", () => brain.sessions.get("missing"));
  const session = await brain.sessions.create({ id: "fixed", tools: [echo()] });
  await answer("a taken id", () => brain.sessions.create({ id: "fixed", tools: [echo()] }));
  await answer("a wrong Tool name", () => session.call("ech", { text: "x" }));
  await answer("a Tool name that is no string", () => session.call(5 as never, { text: "x" }));
  await answer("a duration as deadline", () => session.call("echo", { text: "x" }, { deadline: 5_000 }));
  await answer("an unknown call option", () => session.call("echo", { text: "x" }, { timeout: 5 } as never));
  await answer("non-JSON input", () => session.call("echo", { text: 1n } as never));
  await answer("a bad read range", () => session.read({ from: 0 }));
  await answer("no model", () => session.send("hi"));
  await session.end();
  await answer("a call after end", () => session.call("echo", { text: "x" }));
  const open = await brain.sessions.create({ id: "open", tools: [echo()] });
  await brain.close();
  await answer("a call after close", () => open.call("echo", { text: "x" }));
  await answer("a session after close", () => brain.sessions.create({ tools: [echo()] }));
  await answer("a list after close", () => brain.sessions.list());
  await answer("a read after close", () => open.read());
  return answers;
}

Deno.test("every common mistake is refused with the same code and message embedded, durable (KV and PostgreSQL) and remote; the client keeps working", async () => {
  const embedded = await mistakes(new Brain());
  assert.deepEqual(await mistakes(await Brain.open({ path: `${scratchDir("spec-kv")}/brain.kv` })), embedded);
  assert.deepEqual(await mistakes(await Brain.open({ journal: await postgres.journal() })), embedded);
  const server = await serveBrain({ serverToken: "spec-operator" });
  try {
    assert.deepEqual(
      await mistakes(new Brain({ url: server.url, serverToken: "spec-operator", token: "spec-host" })),
      embedded,
    );
  } finally {
    await server.shutdown();
  }
  assert.ok(embedded.some((line) => line.startsWith("create : invalid_argument: a session id must be")));
  assert.ok(embedded.includes("a list after close: brain_closed: this Brain is closed"));
});

specTest(
  "a records() follower ends without an error when the Brain closes, having yielded every committed record",
  async (brain) => {
    const session = await brain.sessions.create({ tools: [echo()] });
    await session.call("echo", { text: "x" });
    const seen: number[] = [];
    const three = Promise.withResolvers<void>();
    const following = (async () => {
      for await (const record of session.records()) {
        seen.push(record.sequence);
        if (seen.length === 3) three.resolve();
      }
    })();
    await withDeadline(three.promise, "the follower to see the call");
    await session.end();
    await brain.close();
    await withDeadline(following, "the follower to end at close");
    assert.deepEqual(seen, [1, 2, 3]);
  },
);

/** True when `value` and everything in it is frozen. */
const deeplyFrozen = (value: unknown): boolean =>
  typeof value !== "object" || value === null || (Object.isFrozen(value) && Object.values(value).every(deeplyFrozen));

specTest(
  "what a remote client hands back is frozen as embedded: records read and followed, sessions listed, send's reply and ctx.model's response",
  async (brain) => {
    const responses: boolean[] = [];
    const ask = tool({
      name: "ask",
      description: "Asks the model.",
      input: z.object({}),
      run: async (_input, ctx) => {
        const result = await ctx.model({ messages: [{ role: "user", content: "hi" }] });
        responses.push(deeplyFrozen(result));
        return ctx.finish(result.content);
      },
    });
    const session = await brain.sessions.create({ tools: [ask()], model: "default" });
    const end = await session.call("ask", {});
    assert.deepEqual([end.outcome, responses], [ok("answer"), [true]]);
    const read = await session.read();
    assert.deepEqual(read.map((record) => record.kind), [
      "tool_call_started",
      "model_call_started",
      "model_call_finished",
      "tool_result",
      "tool_call_finished",
    ]);
    assert.ok(read.every(deeplyFrozen), "read");
    assert.equal(Object.isFrozen(read), false, "the list read is the caller's own");
    read.reverse();
    assert.equal((await session.read())[0].kind, "tool_call_started", "changing a list read changes no later read");
    read.reverse();
    const followed: JournalRecord[] = [];
    for await (const record of session.records({ signal: AbortSignal.timeout(5_000) })) {
      followed.push(record);
      if (record.sequence === end.sequence) break;
    }
    assert.deepEqual(followed, read);
    assert.ok(followed.every(deeplyFrozen), "followed");
    const listed = await brain.sessions.list();
    assert.deepEqual(listed.map((meta) => meta.id), [session.id]);
    assert.ok(listed.every(deeplyFrozen), "listed");
    const reply = await session.send("hi");
    assert.equal(reply.content, "answer");
    assert.ok(deeplyFrozen(reply), "the reply send resolves with");
  },
  () => ({ models: { default: { provider: new ScriptedProvider(["answer", "answer"]), model: "fixed" } } }),
);

specTest(
  "a records() follower outlives the handle that ended and fails session_not_found once the session is deleted, having yielded every record",
  async (brain) => {
    const first = await brain.sessions.create({ id: "followed", tools: [echo()] });
    const seen: number[] = [];
    let last = Infinity;
    const sawLast = Promise.withResolvers<void>();
    // What the follower ended with: its error, taken as soon as it ends.
    const following = (async () => {
      for await (const record of first.records()) {
        seen.push(record.sequence);
        if (record.sequence >= last) sawLast.resolve();
      }
    })().then(() => "ended without an error", (error) => error);
    await first.call("echo", { text: "a" });
    await first.end();
    const second = await brain.sessions.get("followed", { tools: [echo()] });
    last = (await second.call("echo", { text: "b" })).sequence;
    if (seen.includes(last)) sawLast.resolve();
    // Deleted once this follower has yielded the last record, so it ends by the deletion, not before it.
    await withDeadline(sawLast.promise, "the follower to yield the last record");
    await brain.sessions.delete("followed");
    const ended = await withDeadline(following, "the follower to end");
    assert.ok(hasCode("session_not_found", /followed/)(ended), String(ended));
    assert.deepEqual(seen, [1, 2, 3, 4, 5, 6]);
  },
);

for (const store of ["memory", "Deno KV", "PostgreSQL"] as const) {
  Deno.test(
    `a session another Brain deleted over a shared ${store} journal: its handle's next call is session_not_found, later ones session_closed, and a new session of that id gets nothing from it`,
    async () => {
      const memory = new MemoryJournal();
      const path = `${scratchDir("spec-delete")}/brain.kv`;
      const schema = `t_${crypto.randomUUID().replaceAll("-", "")}`;
      const open = async () =>
        store === "memory"
          ? await Brain.open({ journal: memory })
          : store === "Deno KV"
          ? await Brain.open({ path })
          : await Brain.open({ journal: await PostgresJournal.open(postgres.url, { schema }) });
      await using owner = await open();
      await using other = await open();
      const session = await owner.sessions.create({ tools: [echo()] });
      await session.call("echo", { text: "x" });
      await other.sessions.delete(session.id);
      await assert.rejects(session.call("echo", { text: "y" }), hasCode("session_not_found"));
      await assert.rejects(session.call("echo", { text: "z" }), hasCode("session_closed"));
      await assert.rejects(session.read(), hasCode("session_not_found"));
      const again = await other.sessions.create({ id: session.id, tools: [echo()] });
      await assert.rejects(session.call("echo", { text: "w" }), hasCode("session_closed"));
      assert.deepEqual(await again.read(), []);
    },
  );
}

specTest(
  "a session creation that fails leaves nothing behind: no session, no handler; the same id is created after it, and the Brain still closes",
  async (brain) => {
    const missing = component(new URL("../../.tmp/no-such-component.wasm", import.meta.url));
    const failures: [BrainErrorCode, Parameters<typeof brain.sessions.create>[0]][] = [
      ["duplicate_tool", { tools: [echo(), echo()] }],
      ["unsupported_runtime", { tools: [echo({ env: brainEnv({ name: "ws", filesystem: { workspace: "read" } }) })] }],
      ["invalid_tool", { tools: [echo(), probeTool("probe", missing)({ env: reader })] }],
      ["model_unavailable", { tools: [echo()], model: "no-such-model" }],
    ];
    for (const [code, options] of failures) {
      await assert.rejects((async () => await brain.sessions.create({ id: "s", ...options }))(), hasCode(code), code);
    }
    assert.deepEqual(await brain.sessions.list(), []);
    const session = await brain.sessions.create({ id: "s", tools: [echo()] });
    assert.deepEqual((await session.call("echo", { text: "still here" })).outcome, ok("still here"));
    assert.deepEqual((await brain.sessions.list()).map((meta) => meta.id), ["s"]);
  },
  { allow: { workspaceRoot: ".tmp/ws-spec", filesystem: ["read"] } },
);
