import assert from "node:assert/strict";
import { KvJournal, MAX_RECORDS_PER_APPEND } from "../../src/journal/kv.ts";
import { keys, OPEN_MARK } from "../../src/journal/kv_codec.ts";
import { journalSuite } from "./journal_suite.ts";
import type { RecordBody } from "../../src/journal/records.ts";
import { scratchDir } from "../_support/scratch.ts";
import { hasCode } from "../_support/has_code.ts";
import { closing } from "../_support/closing.ts";
import { assertHostLimitShared, hostSession } from "./host_limit_shared.ts";

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

Deno.test("KvJournal: three journals on one file creating one host's sessions at once never pass maxHostSessions", async () => {
  const path = file();
  const journals = [await KvJournal.open(path), await KvJournal.open(path), await KvJournal.open(path)];
  try {
    await assertHostLimitShared(journals);
  } finally {
    await Promise.all(journals.map((journal) => journal.close()));
  }
});

Deno.test("KvJournal: a file written before host counts has its host sessions counted on the first counted create", async () => {
  const path = file();
  const before = await KvJournal.open(path);
  for (const id of ["a", "b", "c"]) await before.createSession(hostSession(id, "h"));
  await before.createSession(hostSession("other", "g"));
  await before.close();
  // As an earlier version left it: no counts, no mark.
  const kv = await Deno.openKv(path);
  for await (const entry of kv.list({ prefix: ["host_sessions"] })) await kv.delete(entry.key);
  await kv.delete(["hosts_counted"]);
  kv.close();
  await using journal = closing(await KvJournal.open(path));
  await assert.rejects(journal.createSession(hostSession("d", "h"), { maxHostSessions: 3 }), hasCode("limit_exceeded"));
  await journal.createSession(hostSession("d", "h"), { maxHostSessions: 4 });
  await journal.createSession(hostSession("other2", "g"), { maxHostSessions: 2 });
  await journal.deleteSession("a");
  await journal.createSession(hostSession("e", "h"), { maxHostSessions: 4 });
  await assert.rejects(journal.createSession(hostSession("f", "h"), { maxHostSessions: 4 }), hasCode("limit_exceeded"));
});

Deno.test("KvJournal: a session released with a call open is stranded though a deleted incarnation's open calls sort before it", async () => {
  const path = file();
  await using journal = closing(await KvJournal.open(path));
  await journal.createSession(session("s"));
  const lease = await journal.acquire("s", { owner: "n", ttlMs: 60_000 });
  await journal.append("s", [{ kind: "tool_call_started", tool: "t", input: null, activation: "a" }], { lease });
  await journal.release(lease);
  // What a delete cut short leaves: an open call of an earlier incarnation, under an epoch that sorts first.
  const kv = await Deno.openKv(path);
  await kv.set(keys.openCall("s", "", 1), OPEN_MARK);
  kv.close();
  assert.deepEqual(await journal.stranded(), ["s"]);
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

const started = { kind: "tool_call_started", tool: "t", input: null, activation: "a" } as const;
const finish = (call: number) =>
  ({ kind: "tool_call_finished", call, cause: "finish", outcome: { status: "ok", value: call } }) as const;

Deno.test("KvJournal: a call another journal on the file ended is not ended again by one that saw it open", async () => {
  const path = file();
  const [a, b] = [await KvJournal.open(path), await KvJournal.open(path)];
  try {
    await a.createSession(session("s"));
    const [early] = await a.append("s", [started]);
    const [late] = await a.append("s", [started]);
    await b.append("s", [finish(late.sequence)]);
    await assert.rejects(a.append("s", [finish(late.sequence)]), hasCode("call_finished"));
    await b.append("s", [finish(early.sequence)]);
    await assert.rejects(a.append("s", [finish(early.sequence)]), hasCode("call_finished"));
    const ends = (await b.read("s")).filter((record) => record.kind === "tool_call_finished");
    assert.deepEqual(ends.map((record) => (record as { call: number }).call), [late.sequence, early.sequence]);
    assert.deepEqual(await a.openCalls("s"), []);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

Deno.test("KvJournal: an append refused in a shared commit leaves the calls it named open for the next", async () => {
  const path = file();
  const journal = await KvJournal.open(path);
  try {
    await journal.createSession(session("s"));
    const [call] = await journal.append("s", [started]);
    const [twice, once, again] = await Promise.allSettled([
      journal.append("s", [finish(call.sequence), finish(call.sequence)]),
      journal.append("s", [finish(call.sequence)]),
      journal.append("s", [finish(call.sequence)]),
    ]);
    assert.equal(twice.status === "rejected" && twice.reason.code, "call_finished");
    assert.equal(once.status, "fulfilled");
    assert.equal(again.status === "rejected" && again.reason.code, "call_finished");
    await journal.close();
    const reopened = await KvJournal.open(path);
    try {
      assert.deepEqual(await reopened.openCalls("s"), []);
      const [next] = await reopened.append("s", [started]);
      await reopened.append("s", [finish(next.sequence)]);
      await assert.rejects(reopened.append("s", [finish(call.sequence)]), hasCode("call_finished"));
    } finally {
      await reopened.close();
    }
  } finally {
    await journal.close();
  }
});

Deno.test("KvJournal: a file whose session epoch is a UUID, as files written before short epochs, still appends and reads", async () => {
  const path = file();
  const kv = await Deno.openKv(path);
  await kv.set(["session", "s"], new TextEncoder().encode(JSON.stringify(session("s"))));
  await kv.set(["head", "s"], { sequence: 0, epoch: crypto.randomUUID() });
  kv.close();
  const journal = await KvJournal.open(path);
  try {
    const [call] = await journal.append("s", [started]);
    assert.deepEqual((await journal.openCalls("s")).map((record) => record.sequence), [call.sequence]);
    const bodies: RecordBody[] = Array.from(
      { length: MAX_RECORDS_PER_APPEND },
      (_, index) => index === 0 ? finish(call.sequence) : { kind: "tool_returned", call: index },
    );
    const records = await journal.append("s", bodies);
    assert.equal(records.length, MAX_RECORDS_PER_APPEND);
    assert.deepEqual(await journal.read("s"), [call, ...records]);
    assert.deepEqual(await journal.openCalls("s"), []);
  } finally {
    await journal.close();
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
