import assert from "node:assert/strict";
import { KvJournal, MAX_RECORDS_PER_APPEND } from "../../src/journal/kv.ts";
import { journalSuite } from "./journal_suite.ts";
import { scratchDir } from "../_support/scratch.ts";
import { hasCode } from "../_support/has_code.ts";

const dir = scratchDir("kv_test");
const file = () => `${dir}/${crypto.randomUUID()}.kv`;
const session = (id: string) => ({ id, createdAt: Date.now(), tools: [] });

journalSuite("KvJournal", () => KvJournal.open(file()));

Deno.test("KvJournal: records and sessions survive closing and reopening the file", async () => {
  const path = file();
  const first = await KvJournal.open(path);
  await first.createSession(session("s"));
  const committed = await first.append("s", [{ kind: "tool_returned", call: 1 }, { kind: "tool_returned", call: 2 }]);
  await first.close();
  const second = await KvJournal.open(path);
  try {
    assert.deepEqual(await second.read("s"), committed);
    assert.deepEqual((await second.listSessions()).map((meta) => meta.id), ["s"]);
    const [next] = await second.append("s", [{ kind: "tool_returned", call: 3 }]);
    assert.equal(next.sequence, 3);
  } finally {
    await second.close();
  }
});

Deno.test("KvJournal: two journals on one file never take the same sequence", async () => {
  const path = file();
  const [a, b] = [await KvJournal.open(path), await KvJournal.open(path)];
  try {
    await a.createSession(session("s"));
    await Promise.all(
      Array.from({ length: 60 }, (_, call) => (call % 2 ? a : b).append("s", [{ kind: "tool_returned", call }])),
    );
    const records = await a.read("s");
    assert.deepEqual(records.map((record) => record.sequence), Array.from({ length: 60 }, (_, index) => index + 1));
    assert.deepEqual(
      records.map((record) => (record as { call: number }).call).sort((x, y) => x - y),
      Array.from({ length: 60 }, (_, index) => index),
    );
    assert.deepEqual(await b.read("s"), records);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

Deno.test("KvJournal: an append after another writer deleted the session fails and leaves nothing behind", async () => {
  const path = file();
  const [a, b] = [await KvJournal.open(path), await KvJournal.open(path)];
  try {
    await a.createSession(session("s"));
    await a.append("s", [{ kind: "tool_returned", call: 1 }]);
    await b.deleteSession("s");
    await assert.rejects(
      a.append("s", [{ kind: "tool_returned", call: 2 }]),
      hasCode("session_not_found"),
    );
    await assert.rejects(
      a.append("s", [{ kind: "tool_event", call: 2, event: "big", data: "z".repeat(200_000) }]),
      hasCode("session_not_found"),
    );
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
  const raw = await Deno.openKv(path);
  try {
    assert.deepEqual(await Array.fromAsync(raw.list({ prefix: [] })), [], "no record, head or chunk is left");
  } finally {
    raw.close();
  }
});

Deno.test("KvJournal: an oversized append fails whole and commits nothing", async () => {
  const journal = await KvJournal.open(file());
  try {
    await journal.createSession(session("s"));
    const bodies = Array.from({ length: MAX_RECORDS_PER_APPEND + 1 }, (_, call) => ({
      kind: "tool_returned" as const,
      call,
    }));
    await assert.rejects(
      journal.append("s", bodies),
      hasCode("invalid_argument"),
    );
    assert.equal(await journal.head("s"), 0);
    const accepted = await journal.append("s", bodies.slice(1));
    assert.equal(accepted.at(-1)!.sequence, MAX_RECORDS_PER_APPEND);
  } finally {
    await journal.close();
  }
});

Deno.test("KvJournal: close commits every append already queued", async () => {
  const path = file();
  const journal = await KvJournal.open(path);
  await journal.createSession(session("s"));
  const appends = Array.from({ length: 20 }, (_, call) => journal.append("s", [{ kind: "tool_returned", call }]));
  await journal.close();
  const acknowledged = (await Promise.all(appends)).flat();
  const reopened = await KvJournal.open(path);
  try {
    assert.deepEqual(await reopened.read("s"), acknowledged);
  } finally {
    await reopened.close();
  }
});

Deno.test("KvJournal.open: an unusable path fails with a BrainError", async () => {
  await assert.rejects(
    KvJournal.open(`${dir}/missing/dir/x.kv`),
    hasCode("invalid_argument"),
  );
  await assert.rejects(
    KvJournal.open(""),
    hasCode("invalid_argument"),
  );
});
