import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, type Journal, type RecordBody, tool } from "../../mod.ts";
import { KvJournal, MemoryJournal } from "../../src/journal/mod.ts";
import { appendNowOf, firstSequence } from "../../src/journal/journal.ts";
import { scratchDir } from "../_support/scratch.ts";
import { trap } from "../_support/trap.ts";

const dir = scratchDir("hostile_journal");
const stores: [string, () => Promise<Journal>][] = [
  ["memory", () => Promise.resolve(new MemoryJournal())],
  ["kv", () => KvJournal.open(`${dir}/${crypto.randomUUID()}.kv`)],
];
const boom = () => {
  throw new Error("boom");
};

const ok = { status: "ok", value: null } as const;
const ending = (call: unknown) => ({ kind: "tool_call_finished", call, cause: "finish", outcome: ok }) as RecordBody;
const nestedArray = (levels: number) => {
  let value: unknown = "s";
  for (let level = 0; level < levels; level++) value = [value];
  return value;
};

const misuses: [string, (journal: Journal) => Promise<unknown>][] = [
  ["createSession(Proxy)", (journal) => journal.createSession(trap() as never)],
  ["createSession with a cycle", (journal) => {
    const meta: Record<string, unknown> = { id: "c", createdAt: 1, tools: [] };
    meta.self = meta;
    return journal.createSession(meta as never);
  }],
  ["createSession with a getter that throws", (journal) =>
    journal.createSession({
      id: "g",
      createdAt: 1,
      get tools() {
        return boom();
      },
    } as never)],
  ["createSession without an id", (journal) => journal.createSession({ createdAt: 1, tools: [] } as never)],
  ["updateSession(Proxy)", (journal) => journal.updateSession(trap() as never)],
  ["append(Proxy)", (journal) => journal.append("s", trap() as never)],
  ["append([Proxy])", (journal) => journal.append("s", [trap() as never])],
  ["append a string", (journal) => journal.append("s", "records" as never)],
  ["append an unknown kind", (journal) => journal.append("s", [{ kind: "nope" } as never])],
  ["append a kind __proto__", (journal) => journal.append("s", [{ kind: "__proto__" } as never])],
  ["append null", (journal) => journal.append("s", [null as never])],
  ["read from NaN", (journal) => journal.read("s", { from: NaN })],
  ["read from -1", (journal) => journal.read("s", { from: -1 })],
  ["read limit -1", (journal) => journal.read("s", { limit: -1 })],
  ["read limit 1.5", (journal) => journal.read("s", { limit: 1.5 })],
  ["read limit 1e308", (journal) => journal.read("s", { limit: 1e308 })],
  ["read Proxy options", (journal) => journal.read("s", new Proxy({ from: 1 }, { get: boom }) as never)],
  ["acquire a lease of 1e308 ms", (journal) => journal.acquire("s", { owner: "o", ttlMs: 1e308 })],
  ["acquire a lease of 2^31 ms", (journal) => journal.acquire("s", { owner: "o", ttlMs: 2 ** 31 })],
  ["renew a lease for Infinity ms", async (journal) => {
    const lease = await journal.acquire("s", { owner: "o", ttlMs: 1_000 });
    try {
      return await journal.renew(lease, Infinity);
    } finally {
      await journal.release(lease);
    }
  }],
  ["beat for 1e308 ms", (journal) => journal.beat("n", "http://127.0.0.1:1", 1e308)],
  [
    "append to a Symbol id",
    (journal) => journal.append(Symbol("s") as never, [{ kind: "user_message", content: "x" }]),
  ],
  ["read a Proxy id", (journal) => journal.read(trap() as never)],
  ["head of an id nested 100 000 arrays deep", (journal) => journal.head(nestedArray(100_000) as never)],
  ["openCalls of a prototype-less object", (journal) => journal.openCalls(Object.create(null))],
  ["holder of a Proxy", (journal) => journal.holder(trap() as never)],
  ["getSession(Proxy)", (journal) => journal.getSession(trap() as never)],
  ["deleteSession(5)", (journal) => journal.deleteSession(5 as never)],
  ["acquire for a Symbol id", (journal) => journal.acquire(Symbol("s") as never, { owner: "o", ttlMs: 1_000 })],
  ["acquire with null options", (journal) => journal.acquire("s", null as never)],
  ["acquire with a Symbol TTL", (journal) => journal.acquire("s", { owner: "o", ttlMs: Symbol("t") as never })],
  ["acquire for an owner of 1 MB", (journal) => journal.acquire("s", { owner: "o".repeat(1_000_000), ttlMs: 1_000 })],
  ["release(null)", (journal) => journal.release(null as never)],
  ["release(Proxy)", (journal) => journal.release(trap() as never)],
  ["release a string", (journal) => journal.release("lease" as never)],
  ["renew(undefined)", (journal) => journal.renew(undefined as never, 1_000)],
  [
    "renew a lease whose token is a Proxy",
    (journal) => journal.renew({ sessionId: "s", owner: "o", token: trap(), expiresAt: 1, fence: "1" } as never, 1_000),
  ],
  ["append with Proxy options", (journal) => journal.append("s", [{ kind: "user_message", content: "x" }], trap())],
  [
    "append with a lease that is a number",
    (journal) => journal.append("s", [{ kind: "user_message", content: "x" }], { lease: -1 as never }),
  ],
  ["beat to a Symbol URL", (journal) => journal.beat("n", Symbol("u") as never, 1_000)],
  ["beat a node of 1 MB", (journal) => journal.beat("n".repeat(1_000_000), "http://127.0.0.1:1", 1_000)],
  ["end a Symbol call", (journal) => journal.append("s", [ending(Symbol("c"))])],
  ["end a BigInt call", (journal) => journal.append("s", [ending(1n)])],
  ["end a Proxy call", (journal) => journal.append("s", [ending(trap())])],
  ["subscribe to a Proxy id", async (journal) => {
    for await (const _ of journal.subscribe(trap() as never, { signal: AbortSignal.timeout(5_000) })) return;
  }],
  ["subscribe to an id with NUL", async (journal) => {
    for await (const _ of journal.subscribe("s\0", { signal: AbortSignal.timeout(5_000) })) return;
  }],
  ["subscribe from 0", async (journal) => {
    for await (const _ of journal.subscribe("s", { from: 0, signal: AbortSignal.timeout(1_000) })) return;
  }],
  ["subscribe a signal that is none", async (journal) => {
    for await (const _ of journal.subscribe("s", { signal: "stop" as never })) return;
  }],
];

Deno.test("hostile journal calls: Proxies, unknown kinds, cycles and bad ranges are refused invalid_argument, nothing written", async () => {
  for (const [store, open] of stores) {
    const journal = await open();
    try {
      await journal.createSession({ id: "s", createdAt: 1, tools: [] } as never);
      const [first] = await journal.append("s", [{ kind: "user_message", content: "kept" }]);
      const codes = [];
      for (const [what, misuse] of misuses) {
        codes.push(
          `${what}: ${await misuse(journal).then(
            () => "accepted",
            (error) => error instanceof BrainError ? error.code : `a bare ${error}`,
          )}`,
        );
      }
      assert.deepEqual(codes, misuses.map(([what]) => `${what}: invalid_argument`), store);
      assert.deepEqual((await journal.read("s")).map((record) => record.sequence), [first.sequence], store);
      assert.deepEqual((await journal.listSessions()).map((meta) => meta.id), ["s"], store);
    } finally {
      await journal.close();
    }
  }
});

Deno.test("hostile journal calls: a finish of call 0 is call_finished in every store and leaves the open calls as they were", async () => {
  for (const [store, open] of stores) {
    const journal = await open();
    try {
      await journal.createSession({ id: "s", createdAt: 1, tools: [] } as never);
      const [started] = await journal.append("s", [{
        kind: "tool_call_started",
        tool: "t",
        input: {},
        activation: "a",
      }]);
      for (const call of [0, -0, -1, 1.5]) {
        await assert.rejects(
          journal.append("s", [ending(call)]),
          (error) => error instanceof BrainError && error.code === "call_finished",
          `${store}: call ${call}`,
        );
      }
      assert.deepEqual((await journal.openCalls("s")).map((record) => record.sequence), [started.sequence], store);
      const [finished] = await journal.append("s", [ending(started.sequence)]);
      assert.equal(finished.sequence, started.sequence + 1, `${store}: nothing else was committed`);
      assert.deepEqual(await journal.openCalls("s"), [], store);
    } finally {
      await journal.close();
    }
  }
});

Deno.test("hostile journal calls: a record whose getter appends to the same session shares no sequence, and the session reads back whole", async () => {
  for (const [store, open] of stores) {
    const journal = await open();
    try {
      await journal.createSession({ id: "s", createdAt: 1, tools: [] } as never);
      let inner: Promise<unknown> | undefined;
      const data = {
        get nested() {
          inner ??= journal.append("s", [{ kind: "user_message", content: "inner" }]).catch((error) => error);
          return 1;
        },
      };
      const outer = await journal.append("s", [{ kind: "tool_event", call: 0, event: "outer", data } as never])
        .catch((error) => error);
      const settled = [outer, await inner];
      const read = await journal.read("s");
      assert.deepEqual(read.map((record) => record.sequence), read.map((_, index) => index + 1), store);
      for (const answer of settled) {
        if (answer instanceof BrainError) assert.equal(answer.code, "invalid_argument", store);
        else assert.deepEqual(answer, [read[(answer as { sequence: number }[])[0].sequence - 1]], store);
      }
    } finally {
      await journal.close();
    }
  }
});

Deno.test("hostile journal calls: a getter that appends to another memory journal while one packs its record leaves both whole", async () => {
  const [outer, other] = [new MemoryJournal(), new MemoryJournal()];
  try {
    await outer.createSession({ id: "s", createdAt: 1, tools: [] } as never);
    await other.createSession({ id: "s", createdAt: 1, tools: [] } as never);
    const emit = (journal: Journal, data: unknown) =>
      appendNowOf(journal)!("s", [{ kind: "tool_event", call: 0, event: "e", data } as never], firstSequence);
    let inner: unknown;
    const data = {
      first: "kept",
      get second() {
        try {
          inner = emit(other, { other: "inner" });
        } catch (error) {
          inner = error;
        }
        return "also kept";
      },
    };
    emit(outer, data);
    const [record] = await outer.read("s");
    assert.deepEqual(record.kind === "tool_event" && record.data, { first: "kept", second: "also kept" });
    const read = await other.read("s");
    if (inner instanceof BrainError) assert.deepEqual([inner.code, read], ["invalid_argument", []]);
    else assert.deepEqual(read.map((record) => record.kind === "tool_event" && record.data), [{ other: "inner" }]);
  } finally {
    await outer.close();
    await other.close();
  }
});

Deno.test("hostile journal calls: a Tool's event data whose getter emits again leaves a session that reads back whole", async () => {
  const emits: Promise<unknown>[] = [];
  const reentrant = tool({
    name: "reentrant",
    description: "Emit data whose getter emits on each of its first reads.",
    input: z.object({}),
    run: async (_, ctx) => {
      const data = {
        get value() {
          if (emits.length < 4) emits.push(ctx.emit("inner", emits.length).catch((error) => error));
          return 1;
        },
      };
      await ctx.emit("outer", data as never).catch((error) => error);
      await Promise.all(emits);
      return ctx.finish("done");
    },
  });
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [reentrant()] });
  assert.deepEqual((await session.call("reentrant", {})).outcome, { status: "ok", value: "done" });
  const read = await session.read();
  assert.deepEqual(read.map((record) => record.sequence), read.map((_, index) => index + 1));
  assert.ok(read.some((record) => record.kind === "tool_event" && record.event === "outer"));
  for (const settled of await Promise.all(emits)) {
    if (settled instanceof BrainError) assert.equal(settled.code, "invalid_argument");
    else assert.equal(read[(settled as number) - 1]?.kind, "tool_event");
  }
});

Deno.test("hostile journal calls: a result whose outcome getter answers another object each read never lends its finish a value it did not hold", async () => {
  const journal = new MemoryJournal();
  try {
    await journal.createSession({ id: "s", createdAt: 1, tools: [] } as never);
    const now = appendNowOf(journal)!;
    now("s", [{ kind: "tool_call_started", tool: "t", input: {}, activation: "a" }], firstSequence);
    const later = { status: "ok", value: "the second read" };
    let reads = 0;
    const result = {
      kind: "tool_result",
      call: 1,
      get outcome() {
        return ++reads === 1 ? { status: "ok", value: "the first read" } : later;
      },
    };
    const finish = { kind: "tool_call_finished", call: 1, cause: "finish", outcome: later };
    now("s", [result, finish] as never, firstSequence);
    const outcomes = (await journal.read("s", { from: 2 })).map((record) => (record as { outcome?: unknown }).outcome);
    assert.deepEqual(outcomes, [{ status: "ok", value: "the first read" }, later]);
    assert.equal(reads, 1, "the result's outcome is read once");
  } finally {
    await journal.close();
  }
});
