import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainError, tool } from "../../mod.ts";
import { hashToken } from "../../src/embedded/host_token.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { ORPHANED_MESSAGE } from "../../src/embedded/recover.ts";
import { scratchDir } from "../_support/scratch.ts";
import { hasCode } from "../_support/has_code.ts";

const dir = scratchDir("persist_test");
const file = () => `${dir}/${crypto.randomUUID()}.kv`;

/** A Tool that counts its invocations and finishes at once. */
function counted() {
  const inputs: unknown[] = [];
  const declared = tool({
    name: "work",
    description: "Do some work.",
    input: z.object({ n: z.number() }),
    run: ({ n }, ctx) => {
      inputs.push(n);
      return ctx.finish(n * 2);
    },
  });
  return { inputs, placed: declared() };
}

/** Leaves the state a killed process leaves: a committed intent with no end, in a closed journal. */
async function orphanedCall(path: string, id: string): Promise<number> {
  const journal = await KvJournal.open(path);
  try {
    const { placed } = counted();
    await journal.createSession({ id, createdAt: Date.now(), tools: [placed.advertised] });
    const [started] = await journal.append(id, [
      { kind: "tool_call_started", tool: "work", input: { n: 1 }, activation: "gone" },
    ]);
    await journal.append(id, [{ kind: "tool_event", call: started.sequence, event: "progress", data: null }]);
    return started.sequence;
  } finally {
    await journal.close();
  }
}

Deno.test("Brain.open({ path }) keeps sessions and records across restarts", async () => {
  const path = file();
  const { placed } = counted();
  const first = await Brain.open({ path });
  const session = await first.sessions.create({ id: "kept", tools: [placed] });
  await session.call("work", { n: 2 });
  const records = await session.read();
  await first.close();
  await using second = await Brain.open({ path });
  assert.deepEqual((await second.sessions.list()).map((meta) => meta.id), ["kept"]);
  assert.deepEqual(await (await second.sessions.get("kept")).read(), records);
});

Deno.test("the KV file holds the host's token hash and never the token", async () => {
  const path = file();
  const token = `token-${crypto.randomUUID()}`;
  const brain = await Brain.open({ path });
  try {
    const { placed } = counted();
    const session = await brain.sessions.create({ tools: [placed], host: { id: "app", token } });
    await session.call("work", { n: 1 });
    assert.deepEqual((await brain.sessions.list())[0].host, { id: "app", tokenHash: await hashToken(token) });
  } finally {
    await brain.close();
  }
  const raw = new TextDecoder("latin1").decode(
    new Uint8Array(
      (await Promise.all(
        [...Deno.readDirSync(dir)].filter((entry) => entry.isFile && entry.name.startsWith(path.split("/").at(-1)!))
          .map((entry) => Deno.readFile(`${dir}/${entry.name}`)),
      )).flatMap((bytes) => [...bytes]),
    ),
  );
  assert.ok(raw.includes(await hashToken(token)), "the raw file holds the stored hash");
  assert.ok(!raw.includes(token), "the raw file never holds the token");
  assert.ok(!raw.includes(token.slice(6, 20)), "nor any part of it");
});

Deno.test("a host registration with sessions placed in it is kept while disconnected", async () => {
  const path = file();
  const host = { id: "app", token: crypto.randomUUID() };
  const first = await Brain.open({ path });
  const { id } = await first.sessions.create({ tools: [counted().placed], host });
  await first.close();
  await using second = await Brain.open({ path });
  assert.deepEqual((await second.sessions.list()).map((meta) => meta.host), [
    { id: "app", tokenHash: await hashToken(host.token) },
  ]);
  const { inputs, placed } = counted();
  const session = await second.sessions.get(id, { tools: [placed], host });
  assert.deepEqual((await session.call("work", { n: 4 })).outcome, { status: "ok", value: 8 });
  assert.deepEqual(inputs, [4]);
});

Deno.test("Brain.open ends a call left in flight as unknown and never dispatches it again", async () => {
  const path = file();
  const call = await orphanedCall(path, "crashed");
  const brain = await Brain.open({ path });
  try {
    const records = await (await brain.sessions.get("crashed")).read();
    assert.deepEqual(records.map((record) => record.sequence), [1, 2, 3]);
    const end = records[2];
    assert.equal(end.kind, "tool_call_finished");
    assert.deepEqual(
      { call: end.call, cause: end.cause, outcome: end.outcome },
      { call, cause: "unknown", outcome: { status: "unknown", message: ORPHANED_MESSAGE } },
    );
    const { inputs, placed } = counted();
    const session = await brain.sessions.get("crashed", { tools: [placed] });
    assert.deepEqual(inputs, [], "restoring the handler replays nothing");
    await session.call("work", { n: 5 });
    assert.deepEqual(inputs, [5], "only the new command runs");
    assert.equal((await session.read()).filter((record) => record.kind === "tool_call_finished").length, 2);
  } finally {
    await brain.close();
  }
  await using reopened = await Brain.open({ path });
  assert.equal((await (await reopened.sessions.get("crashed")).read()).length, 6, "nothing more is ended");
});

Deno.test("sessions.get ends orphaned calls of a journal given to the constructor", async () => {
  const path = file();
  const call = await orphanedCall(path, "s");
  await using brain = new Brain({ journal: await KvJournal.open(path) });
  const session = await brain.sessions.get("s");
  const last = (await session.read()).at(-1)!;
  assert.equal(last.kind === "tool_call_finished" && last.call, call);
  assert.equal(last.kind === "tool_call_finished" && last.cause, "unknown");
});

Deno.test("sessions.get leaves the open calls of a live handle alone", async () => {
  await using brain = await Brain.open({ path: file() });
  const waiting = tool({
    name: "wait",
    description: "Wait for cancellation.",
    input: z.object({}),
    run: async (_input, ctx) => {
      await ctx.emit("waiting");
    },
  });
  const session = await brain.sessions.create({ tools: [waiting()] });
  const started = await session.start("wait", {});
  const controller = new AbortController();
  for await (const record of session.records({ signal: controller.signal })) {
    if (record.kind === "tool_returned") controller.abort();
  }
  await brain.sessions.get(session.id);
  assert.equal((await session.read()).some((record) => record.kind === "tool_call_finished"), false);
  assert.equal((await started.cancel()).cause, "cancelled");
});

Deno.test("a Brain takes a journal or a path, and a path only through Brain.open", async () => {
  const isInvalid = hasCode("invalid_argument");
  assert.throws(() => new Brain({ path: file() }), isInvalid);
  const journal = await KvJournal.open(file());
  try {
    await assert.rejects(Brain.open({ path: file(), journal }), isInvalid);
  } finally {
    await journal.close();
  }
  await assert.rejects(Brain.open({ path: `${dir}/no/such/dir.kv` }), isInvalid);
});

Deno.test("Brain.open({ path }) in a folder that does not exist names the folder and how to create it", async () => {
  const folder = `${dir}/${crypto.randomUUID()}/nested`;
  await assert.rejects(Brain.open({ path: `${folder}/brain.kv` }), (error: BrainError) => {
    assert.equal(error.code, "invalid_argument");
    assert.equal(
      error.message,
      `cannot open the journal at ${folder}/brain.kv: the folder ${folder} does not exist; ` +
        `create it first, as in await Deno.mkdir(${JSON.stringify(folder)}, { recursive: true })`,
    );
    return true;
  });
  await assert.rejects(Deno.stat(folder), Deno.errors.NotFound);
});

Deno.test("Brain.open({ path }) without --unstable-kv names the flag and the deno.json setting", async () => {
  // Without the flag Deno defines no Deno.openKv at all; hide it the same way for this test.
  const descriptor = Object.getOwnPropertyDescriptor(Deno, "openKv")!;
  Object.defineProperty(Deno, "openKv", { get: () => undefined, configurable: true });
  try {
    await assert.rejects(Brain.open({ path: file() }), (error: BrainError) => {
      assert.equal(error.code, "unsupported_runtime");
      assert.match(error.message, /Deno KV needs the --unstable-kv flag \(or "unstable": \["kv"\] in deno\.json\)$/);
      return true;
    });
  } finally {
    Object.defineProperty(Deno, "openKv", descriptor);
  }
  await (await Brain.open({ path: file() })).close();
});
