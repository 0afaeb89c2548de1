import assert from "node:assert/strict";
import { KvJournal } from "../../src/journal/kv.ts";
import type { RecordBody } from "../../src/journal/records.ts";
import { keys } from "../../src/journal/kv_codec.ts";
import { ORPHAN_AGE_MS } from "../../src/journal/kv.ts";
import { scratchDir } from "../_support/scratch.ts";
import { hasCode } from "../_support/has_code.ts";

const dir = scratchDir("kv_limits_test");
const file = () => `${dir}/${crypto.randomUUID()}.kv`;
const started: RecordBody = { kind: "tool_call_started", tool: "t", input: null, activation: "a" };

for (const length of [64, 128]) {
  Deno.test(`KvJournal: a burst of 3,000 appends to a session with a ${length}-character id all commit`, async () => {
    const journal = await KvJournal.open(file());
    const id = "s".repeat(length);
    try {
      await journal.createSession({ id, createdAt: Date.now(), tools: [] });
      const committed = await Promise.all(Array.from({ length: 3_000 }, () => journal.append(id, [started])));
      assert.deepEqual(committed.flat().map((record) => record.sequence), committed.map((_, index) => index + 1));
      assert.equal((await journal.openCalls(id)).length, 3_000);
    } finally {
      await journal.close();
    }
  });
}

Deno.test("KvJournal: an append whose keys alone exceed one atomic commit fails invalid_argument, writing nothing", async () => {
  const journal = await KvJournal.open(file());
  const id = "s".repeat(128);
  try {
    await journal.createSession({ id, createdAt: Date.now(), tools: [] });
    await assert.rejects(journal.append(id, Array.from({ length: 400 }, () => started)), hasCode("invalid_argument"));
    assert.equal(await journal.head(id), 0);
    const accepted = await journal.append(id, Array.from({ length: 150 }, () => started));
    assert.equal(accepted.length, 150);
  } finally {
    await journal.close();
  }
});

Deno.test("KvJournal: a store that fails mid-write rejects with a typed error and keeps every acknowledged record", async () => {
  const path = file();
  const setup = await KvJournal.open(path);
  await setup.createSession({ id: "s", createdAt: Date.now(), tools: [] });
  await setup.close();
  // A file-size limit (with SIGXFSZ ignored) makes SQLite's writes fail as a full or failing disk does.
  const output = await new Deno.Command("bash", {
    args: [
      "-c",
      `trap '' XFSZ; ulimit -f 2000; exec "$0" run --allow-read=. --allow-write=.tmp tests/journal/fixtures/fill.ts "$1"`,
      Deno.execPath(),
      path,
    ],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const lines = new TextDecoder().decode(output.stdout).trim().split("\n");
  const failure = lines.at(-1)!.split(" ");
  assert.equal(failure[0], "error", new TextDecoder().decode(output.stderr));
  assert.equal(failure[1], "BrainError");
  assert.ok(["storage_full", "storage_unavailable"].includes(failure[2]), failure.join(" "));
  const acknowledged = lines.filter((line) => line.startsWith("ack ")).map((line) => Number(line.slice(4)));
  assert.ok(acknowledged.length > 10);
  const reopened = await KvJournal.open(path);
  try {
    const records = await reopened.read("s");
    assert.deepEqual(records.map((record) => record.sequence), records.map((_, index) => index + 1));
    assert.ok(records.length >= acknowledged.at(-1)!, "every acknowledged record is there");
  } finally {
    await reopened.close();
  }
});

/** Leaves what a writer killed between writing a blob's chunks and committing its record leaves. */
async function orphanBlob(path: string, session: string, at: number): Promise<string> {
  const kv = await Deno.openKv(path);
  const blob = crypto.randomUUID();
  await kv.atomic()
    .set(keys.pending(session, blob), { at })
    .set(keys.chunk(session, blob, 0), new Uint8Array(60_000))
    .set(keys.chunk(session, blob, 1), new Uint8Array(10))
    .commit();
  kv.close();
  return blob;
}

async function chunkBlobs(path: string): Promise<string[]> {
  const kv = await Deno.openKv(path);
  try {
    const blobs = new Set<string>();
    for await (const entry of kv.list({ prefix: ["chunk"] })) blobs.add(entry.key[2] as string);
    for await (const entry of kv.list({ prefix: ["pending"] })) blobs.add(entry.key[2] as string);
    return [...blobs];
  } finally {
    kv.close();
  }
}

Deno.test("KvJournal.open sweeps chunks a dead writer left uncommitted, and keeps committed and recent ones", async () => {
  const path = file();
  const journal = await KvJournal.open(path);
  await journal.createSession({ id: "s", createdAt: Date.now(), tools: [] });
  const [big] = await journal.append("s", [{ kind: "tool_event", call: 1, event: "big", data: "z".repeat(200_000) }]);
  await journal.close();
  const committed = await chunkBlobs(path);
  assert.equal(committed.length, 1, "the committed record's chunks, and no pending mark");
  const old = await orphanBlob(path, "s", Date.now() - ORPHAN_AGE_MS - 1_000);
  const recent = await orphanBlob(path, "s", Date.now());
  const reopened = await KvJournal.open(path);
  try {
    assert.deepEqual((await chunkBlobs(path)).sort(), [...committed, recent].sort());
    assert.ok(!(await chunkBlobs(path)).includes(old));
    assert.deepEqual(await reopened.read("s"), [big]);
    await reopened.acquire("s", { owner: "next", ttlMs: 60_000 });
    assert.deepEqual(await chunkBlobs(path), committed, "a new owner sweeps every uncommitted blob of its session");
  } finally {
    await reopened.close();
  }
});
