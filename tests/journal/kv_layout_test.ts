import assert from "node:assert/strict";
import { KvJournal } from "../../src/journal/kv.ts";
import type { RecordBody } from "../../src/journal/records.ts";
import { scratchDir } from "../_support/scratch.ts";
import { hasCode } from "../_support/has_code.ts";

const dir = scratchDir("kv_layout");
const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const ok = { status: "ok", value: 1 } as const;
const BODIES: RecordBody[] = [
  { kind: "tool_call_started", tool: "t", input: { x: 1 }, activation: "a" },
  { kind: "tool_call_started", tool: "t", input: { x: 2 }, activation: "a" },
  { kind: "tool_call_finished", call: 2, cause: "finish", outcome: ok },
];

/**
 * A file as journals wrote it before heads and open calls sat next to the
 * records: session `s` with BODIES (call 1 open, call 2 finished), its head
 * under ["head"] and its open call under ["open"], and the open call a deleted
 * incarnation left behind.
 */
async function earlierFile(): Promise<string> {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const kv = await Deno.openKv(path);
  try {
    await kv.set(["session", "s"], json({ id: "s", createdAt: 1, tools: [] }));
    for (const [index, body] of BODIES.entries()) {
      await kv.set(["record", "s", "e1", index + 1], json({ ...body, at: 5 }));
    }
    await kv.set(["head", "s"], { sequence: BODIES.length, epoch: "e1" });
    await kv.set(["open", "s", "e1", 1], true);
    await kv.set(["open", "s", "gone", 7], true);
  } finally {
    kv.close();
  }
  return path;
}

/** The keys left under the earlier layout's prefixes. */
async function earlierKeys(path: string): Promise<Deno.KvKey[]> {
  const kv = await Deno.openKv(path);
  try {
    const found: Deno.KvKey[] = [];
    for (const prefix of [["head"], ["open"]]) for await (const entry of kv.list({ prefix })) found.push(entry.key);
    return found;
  } finally {
    kv.close();
  }
}

Deno.test("KvJournal: a file of the earlier layout opens with its records, head and open calls, and goes on", async () => {
  const path = await earlierFile();
  const journal = await KvJournal.open(path);
  try {
    assert.deepEqual((await journal.read("s")).map(({ sequence, kind }) => [sequence, kind]), [
      [1, "tool_call_started"],
      [2, "tool_call_started"],
      [3, "tool_call_finished"],
    ]);
    assert.equal(await journal.head("s"), 3);
    assert.deepEqual((await journal.openCalls("s")).map((record) => record.sequence), [1]);
    await assert.rejects(
      journal.append("s", [{ kind: "tool_call_finished", call: 2, cause: "finish", outcome: ok }]),
      hasCode("call_finished"),
    );
    const [finish] = await journal.append("s", [{ kind: "tool_call_finished", call: 1, cause: "finish", outcome: ok }]);
    assert.equal(finish.sequence, 4);
    assert.deepEqual(await journal.openCalls("s"), []);
  } finally {
    await journal.close();
  }
  assert.deepEqual(await earlierKeys(path), []);
});

Deno.test("KvJournal: two journals opening a file of the earlier layout at once agree on its head and open calls", async () => {
  const path = await earlierFile();
  const journals = await Promise.all([KvJournal.open(path), KvJournal.open(path)]);
  try {
    for (const journal of journals) {
      assert.equal(await journal.head("s"), 3);
      assert.deepEqual((await journal.openCalls("s")).map((record) => record.sequence), [1]);
    }
    const [a, b] = journals;
    await a.append("s", [{ kind: "tool_call_finished", call: 1, cause: "finish", outcome: ok }]);
    assert.deepEqual(await b.openCalls("s"), []);
    const [next] = await b.append("s", [{ kind: "tool_returned", call: 9 }]);
    assert.equal(next.sequence, 5);
  } finally {
    await Promise.all(journals.map((journal) => journal.close()));
  }
  assert.deepEqual(await earlierKeys(path), []);
});

Deno.test("KvJournal: a head of the earlier layout that is no head still fails journal_corrupt once moved", async () => {
  const path = await earlierFile();
  {
    using kv = await Deno.openKv(path);
    await kv.set(["head", "s"], "no head");
  }
  const journal = await KvJournal.open(path);
  try {
    await assert.rejects(journal.read("s"), hasCode("journal_corrupt"));
    await journal.deleteSession("s");
    assert.equal(await journal.getSession("s"), undefined);
  } finally {
    await journal.close();
  }
  assert.deepEqual(await earlierKeys(path), []);
});

Deno.test("KvJournal: a journal made over an open Deno.Kv of the earlier layout moves it before its first answer", async () => {
  const path = await earlierFile();
  const journal = new KvJournal(await Deno.openKv(path));
  try {
    const [head, open] = await Promise.all([journal.head("s"), journal.openCalls("s")]);
    assert.equal(head, 3);
    assert.deepEqual(open.map((record) => record.sequence), [1]);
    await assert.rejects(journal.createSession({ id: "s", createdAt: 2, tools: [] }), hasCode("session_exists"));
    const [finish] = await journal.append("s", [{ kind: "tool_call_finished", call: 1, cause: "finish", outcome: ok }]);
    assert.equal(finish.sequence, 4);
  } finally {
    await journal.close();
  }
  assert.deepEqual(await earlierKeys(path), []);
});

Deno.test("KvJournal: keys under the earlier layout's prefixes that no journal wrote neither stop the file opening nor move", async () => {
  const path = await earlierFile();
  {
    using kv = await Deno.openKv(path);
    await kv.set(["head"], { sequence: 1, epoch: "x" });
    await kv.set(["head", 5], { sequence: 1, epoch: "x" });
    await kv.set(["head", "s", "extra"], { sequence: 1, epoch: "x" });
    await kv.set(["open", "s", "e1", "no call"], true);
    await kv.set(["open", "s", "e1", 2, "extra"], true);
  }
  const journal = await KvJournal.open(path);
  try {
    assert.equal(await journal.head("s"), 3);
    assert.deepEqual((await journal.openCalls("s")).map((record) => record.sequence), [1]);
  } finally {
    await journal.close();
  }
  // A prefix lists no key equal to it: ["head"] itself is neither read nor listed.
  assert.deepEqual(await earlierKeys(path), [["head", "s", "extra"], ["head", 5]]);
});
