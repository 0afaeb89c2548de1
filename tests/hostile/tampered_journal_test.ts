import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type RecordBody, tool } from "../../mod.ts";
import { KvJournal, MemoryJournal } from "../../src/journal/mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { hasCode } from "../_support/has_code.ts";
import { scratchDir } from "../_support/scratch.ts";
import { closing } from "../_support/closing.ts";

const dir = scratchDir("hostile_tampered");
const ok = { status: "ok", value: 1 } as const;
const BODIES: RecordBody[] = [
  { kind: "user_message", content: "hi" },
  { kind: "tool_call_started", tool: "echo", input: { x: 1 }, activation: "a" },
  { kind: "tool_event", call: 2, event: "ev", data: { x: 1 } },
  { kind: "tool_call_finished", call: 2, cause: "finish", outcome: ok },
];

/** A KV journal file holding session `s` with {@linkcode BODIES}, and the key prefix of its records. */
async function journalFile(): Promise<{ path: string; records: Deno.KvKey }> {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const journal = await KvJournal.open(path);
  try {
    await journal.createSession({ id: "s", createdAt: 1, tools: [] });
    await journal.append("s", BODIES);
  } finally {
    await journal.close();
  }
  using kv = await Deno.openKv(path);
  for await (const entry of kv.list({ prefix: ["record", "s"] })) return { path, records: entry.key.slice(0, 3) };
  throw new Error("no records stored");
}

/**
 * Asserts a follower of session `s` yields records 1 and 2, then fails
 * `journal_corrupt` at the damaged record 3. A store failing for a moment is
 * read again; a damaged record was once retried that way, forever.
 */
async function assertFollowerStopsAtThird(journal: KvJournal): Promise<void> {
  const seen: number[] = [];
  await assert.rejects(
    (async () => {
      for await (const record of journal.subscribe("s")) seen.push(record.sequence);
    })(),
    hasCode("journal_corrupt", /record 3 /),
  );
  assert.deepEqual(seen, [1, 2]);
}

const bytes = (value: unknown) => new TextEncoder().encode(typeof value === "string" ? value : JSON.stringify(value));
const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels);

/**
 * How a hostile hand edits the file: what it does to the record keys, and the record it spoils. Each makes it
 * hold what no store commits (a store checks a record's kind and a finish's call, not each field's type).
 */
const EDITS: [string, number, (kv: Deno.Kv, key: Deno.KvKey) => Promise<unknown>][] = [
  ["bytes that are no JSON", 3, (kv, key) => kv.set(key, bytes("{not json"))],
  ["JSON null", 3, (kv, key) => kv.set(key, bytes("null"))],
  ["a JSON array", 3, (kv, key) => kv.set(key, bytes([1, 2]))],
  ["a number instead of bytes", 3, (kv, key) => kv.set(key, 5)],
  ["chunks named by a number", 3, (kv, key) => kv.set(key, { chunks: 5, count: 1 })],
  ["an unknown kind", 3, (kv, key) => kv.set(key, bytes({ kind: "zzz", at: 1 }))],
  ["a kind __proto__", 3, (kv, key) => kv.set(key, bytes({ kind: "__proto__", at: 1 }))],
  [
    "a finish of no call",
    4,
    (kv, key) => kv.set(key, bytes({ kind: "tool_call_finished", call: "2", cause: "finish", outcome: ok, at: 1 })),
  ],
  ["no commit time", 3, (kv, key) => kv.set(key, bytes({ kind: "tool_event", call: 2, event: "ev", data: 1 }))],
  [
    "data nested 100 000 deep",
    3,
    (kv, key) => kv.set(key, bytes(`{"kind":"tool_event","call":2,"event":"ev","data":${nested(30_000)},"at":1}`)),
  ],
  ["a record deleted between others", 3, (kv, key) => kv.delete(key)],
  ["the last record deleted", 4, (kv, key) => kv.delete(key)],
];

Deno.test("hostile tampered KV journal: a record edited to no record, or missing, fails the read journal_corrupt; the session can still be deleted", async () => {
  for (const [what, sequence, edit] of EDITS) {
    const { path, records } = await journalFile();
    {
      using kv = await Deno.openKv(path);
      await edit(kv, [...records, sequence]);
    }
    const journal = await KvJournal.open(path);
    try {
      await assert.rejects(journal.read("s"), hasCode("journal_corrupt", new RegExp(`record ${sequence} `)), what);
      // The records before it are still read.
      const before = await journal.read("s", { limit: sequence - 1 });
      assert.deepEqual(before.map((record) => record.sequence), [...Array(sequence - 1).keys()].map((i) => i + 1));
      await journal.deleteSession("s");
      assert.equal(await journal.getSession("s"), undefined, what);
    } finally {
      await journal.close();
    }
    using kv = await Deno.openKv(path);
    assert.deepEqual(await Array.fromAsync(kv.list({ prefix: ["record", "s"] })), [], `${what}: nothing left`);
  }
});

Deno.test("hostile tampered KV journal: a follower yields the records before a damaged one, then fails journal_corrupt", async () => {
  const { path, records } = await journalFile();
  {
    using kv = await Deno.openKv(path);
    await kv.set([...records, 3], bytes("{not json"));
  }
  const journal = await KvJournal.open(path);
  try {
    await assertFollowerStopsAtThird(journal);
  } finally {
    await journal.close();
  }
});

Deno.test("hostile tampered KV journal: a head edited to no head fails journal_corrupt; the session can still be deleted", async () => {
  const { path } = await journalFile();
  {
    using kv = await Deno.openKv(path);
    await kv.set(["head", "s"], 5);
  }
  const journal = await KvJournal.open(path);
  try {
    await assert.rejects(journal.read("s"), hasCode("journal_corrupt"));
    await assert.rejects(journal.head("s"), hasCode("journal_corrupt"));
    await journal.deleteSession("s");
    assert.equal(await journal.getSession("s"), undefined);
  } finally {
    await journal.close();
  }
});

Deno.test("hostile tampered KV journal: an assistant message whose toolCalls are no list fails the next send journal_corrupt", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const echo = tool({ name: "echo", description: "Echo x.", input: z.object({ x: z.number() }), run: ({ x }) => x });
  const model = () => ({
    provider: new ScriptedProvider([{ toolCalls: [{ id: "c1", name: "echo", input: { x: 1 } }] }, "done", "again"]),
    model: "m",
  });
  let id: string;
  {
    await using brain = new Brain({ journal: await KvJournal.open(path) });
    const session = await brain.sessions.create({ tools: [echo()], model: model() });
    await session.send("hi");
    id = session.id;
  }
  {
    using kv = await Deno.openKv(path);
    for await (const entry of kv.list<Uint8Array>({ prefix: ["record", id] })) {
      const body = JSON.parse(new TextDecoder().decode(entry.value));
      if (body.kind === "assistant_message") await kv.set(entry.key, bytes({ ...body, toolCalls: { length: 1 } }));
    }
  }
  await using brain = new Brain({ journal: await KvJournal.open(path) });
  const session = await brain.sessions.get(id, { tools: [echo()], model: model() });
  await assert.rejects(session.send("again"), hasCode("journal_corrupt", /assistant_message whose toolCalls/));
});

/** Session metadata no reader can rely on, as a hostile hand stores it (bytes) or a careless caller passes it. */
const BAD_METAS: [string, unknown][] = [
  ["no JSON", "{not json"],
  ["tools that are a number", { id: "s", createdAt: 1, tools: 5 }],
  ["tools holding null", { id: "s", createdAt: 1, tools: [null] }],
  ["no tools", { id: "s", createdAt: 1 }],
  ["createdAt a string", { id: "s", createdAt: "x", tools: [] }],
  ["a host without a token hash", { id: "s", createdAt: 1, tools: [], host: { id: "h" } }],
  ["a model that is a string", { id: "s", createdAt: 1, tools: [], model: "m" }],
];

Deno.test("hostile tampered KV journal: session metadata edited to no metadata fails journal_corrupt, and the session can still be deleted", async () => {
  for (const [what, meta] of BAD_METAS) {
    const { path } = await journalFile();
    {
      using kv = await Deno.openKv(path);
      await kv.set(["session", "s"], bytes(meta));
    }
    {
      await using brain = new Brain({ journal: await KvJournal.open(path) });
      await assert.rejects(brain.sessions.get("s"), hasCode("journal_corrupt", /stored metadata/), what);
      await assert.rejects(brain.sessions.list(), hasCode("journal_corrupt"), what);
      await brain.sessions.delete("s");
      assert.deepEqual(await brain.sessions.list(), [], what);
    }
  }
});

Deno.test("hostile journal metadata: every store refuses metadata whose fields a reader relies on are of the wrong type", async () => {
  for (const journal of [new MemoryJournal(), await KvJournal.open(`${dir}/${crypto.randomUUID()}.kv`)]) {
    try {
      for (const [what, meta] of BAD_METAS.slice(1)) {
        await assert.rejects(journal.createSession(meta as never), hasCode("invalid_argument"), what);
      }
    } finally {
      await journal.close();
    }
  }
});

/** What a hostile hand writes to a session's lease or fence key instead of what journals write. */
const LEASE_EDITS: [string, Deno.KvKey, unknown][] = [
  ["an expiry that is no time", ["lease", "s"], { expiresAt: "soon" }],
  ["an endless expiry", ["lease", "s"], { expiresAt: Infinity }],
  ["a lease that is a number", ["lease", "s"], 5],
  ["a fence whose token is no number", ["fence", "s"], { owner: "n", token: "x" }],
  ["a fence that is a string", ["fence", "s"], "n"],
];

Deno.test("hostile tampered KV journal: a lease or fence no journal writes fails acquire, holder and an unleased append journal_corrupt; stranded still answers", async () => {
  for (const [what, key, value] of LEASE_EDITS) {
    const path = `${dir}/${crypto.randomUUID()}.kv`;
    {
      await using journal = closing(await KvJournal.open(path));
      for (const id of ["s", "t"]) {
        await journal.createSession({ id, createdAt: 1, tools: [] });
        const lease = await journal.acquire(id, { owner: "n", ttlMs: 60_000 });
        await journal.append(id, [{ kind: "tool_call_started", tool: "echo", input: {}, activation: "a" }], { lease });
        await journal.release(lease);
      }
    }
    {
      using kv = await Deno.openKv(path);
      await kv.set(key, value);
    }
    await using journal = closing(await KvJournal.open(path));
    await assert.rejects(journal.acquire("s", { owner: "m", ttlMs: 1_000 }), hasCode("journal_corrupt", /lease/), what);
    await assert.rejects(journal.holder("s"), hasCode("journal_corrupt"), what);
    await assert.rejects(journal.append("s", [{ kind: "tool_returned", call: 9 }]), hasCode("journal_corrupt"), what);
    assert.ok((await journal.stranded()).includes("t"), what);
  }
});

Deno.test("hostile tampered KV journal: a chunk of a large record edited to no bytes fails the read and a follower journal_corrupt", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  {
    await using journal = closing(await KvJournal.open(path));
    await journal.createSession({ id: "s", createdAt: 1, tools: [] });
    await journal.append("s", [...BODIES.slice(0, 2), {
      kind: "tool_event",
      call: 2,
      event: "big",
      data: "z".repeat(130_000),
    }]);
  }
  {
    using kv = await Deno.openKv(path);
    for await (const entry of kv.list({ prefix: ["chunk", "s"] })) {
      await kv.set(entry.key, 5);
      break;
    }
  }
  await using journal = closing(await KvJournal.open(path));
  await assert.rejects(journal.read("s"), hasCode("journal_corrupt", /record 3 has a chunk that is no bytes/));
  await assertFollowerStopsAtThird(journal);
  await journal.deleteSession("s");
  assert.equal(await journal.getSession("s"), undefined);
});
