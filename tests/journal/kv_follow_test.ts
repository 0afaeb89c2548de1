import assert from "node:assert/strict";
import { KvJournal } from "../../src/journal/kv.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { withDeadline } from "../_support/deadline.ts";
import { scratchDir } from "../_support/scratch.ts";
import { runDeno } from "../_support/spawn_deno.ts";
import { journalRecords, until } from "../_support/until.ts";

const dir = scratchDir("kv_follow_test");
const session = (id: string) => ({ id, createdAt: Date.now(), tools: [] });
/** How long a subscriber may wait for records before the test fails, so a missed wake never hangs it. */
const DEADLINE_MS = 30_000;
/** A writer that appends one record and dies at once, before it can announce the commit. */
const DIES = "tests/journal/fixtures/append_then_die.ts";

/** Follows `sessionId` until `count` records arrived; fails after the deadline. */
function collect(journal: KvJournal, sessionId: string, count: number): Promise<JournalRecord[]> {
  return until(journalRecords(journal, sessionId), (seen) => seen.length === count, {
    what: `${count} records`,
    timeoutMs: DEADLINE_MS,
  });
}

Deno.test("KvJournal.subscribe sees every record another process commits, dense and in order", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const count = 200;
  const journal = await KvJournal.open(path);
  try {
    await journal.createSession(session("w"));
    const following = collect(journal, "w", count);
    const writer = await runDeno(
      ["run", "--allow-read=.", "--allow-write=.tmp", "tests/e2e/fixtures/writer.ts", path, "child", `${count}`],
      { stdout: "null", signal: AbortSignal.timeout(DEADLINE_MS) },
    );
    assert.equal(writer.code, 0, new TextDecoder().decode(writer.stderr));
    const seen = await following;
    assert.deepEqual(seen.map((record) => record.sequence), Array.from({ length: count }, (_, index) => index + 1));
    assert.deepEqual(
      seen.map((record) => record.kind === "tool_event" ? record.data : undefined),
      Array.from({ length: count }, (_, n) => n),
    );
    assert.deepEqual(seen, await journal.read("w"), "each record as a read returns it");
  } finally {
    await journal.close();
  }
});

Deno.test("KvJournal.subscribe on a second journal of the file sees the first one's commits", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const [writer, reader] = [await KvJournal.open(path), await KvJournal.open(path)];
  try {
    await writer.createSession(session("s"));
    const following = collect(reader, "s", 30);
    const committed: JournalRecord[] = [];
    for (let call = 0; call < 30; call++) {
      committed.push(...await writer.append("s", [{ kind: "tool_returned", call }]));
    }
    assert.deepEqual(await following, committed);
  } finally {
    await Promise.all([writer.close(), reader.close()]);
  }
});

Deno.test("KvJournal.close ends a subscription waiting on another writer's commits and releases its watch", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const journal = await KvJournal.open(path);
  await journal.createSession(session("s"));
  await journal.append("s", [{ kind: "tool_returned", call: 1 }]);
  const seen: number[] = [];
  const sawBoth = Promise.withResolvers<void>();
  const following = (async () => {
    for await (const record of journal.subscribe("s")) {
      seen.push(record.sequence);
      if (seen.length === 2) sawBoth.resolve();
    }
  })();
  const other = await KvJournal.open(path);
  try {
    await other.append("s", [{ kind: "tool_returned", call: 2 }]);
    await withDeadline(sawBoth.promise, "the other writer's commit", DEADLINE_MS);
    await journal.close();
    await following;
    assert.deepEqual(seen, [1, 2]);
  } finally {
    await Promise.all([journal.close(), other.close()]);
  }
});

Deno.test("KvJournal.subscribe: aborting or breaking out of a subscription releases its watch", async () => {
  const journal = await KvJournal.open(`${dir}/${crypto.randomUUID()}.kv`);
  try {
    await journal.createSession(session("s"));
    await journal.append("s", [{ kind: "tool_returned", call: 1 }]);
    const controller = new AbortController();
    const first = Promise.withResolvers<void>();
    const waiting = (async () => {
      const seen = [];
      for await (const record of journal.subscribe("s", { signal: controller.signal })) {
        seen.push(record.sequence);
        first.resolve();
      }
      return seen;
    })();
    await first.promise;
    for await (const record of journal.subscribe("s")) {
      assert.equal(record.sequence, 1);
      break;
    }
    controller.abort();
    assert.deepEqual(await waiting, [1]);
  } finally {
    await journal.close();
  }
});

Deno.test("KvJournal never rewrites the sidecar for its own subscribers; a journal that follows later sees every commit", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const writer = await KvJournal.open(path);
  let reader: KvJournal | undefined;
  try {
    await writer.createSession(session("s"));
    const own = collect(writer, "s", 20);
    for (let call = 0; call < 20; call++) await writer.append("s", [{ kind: "tool_returned", call }]);
    assert.equal((await own).length, 20);
    assert.equal((await Deno.stat(`${path}.wake`)).size, 0, "only the subscriber's empty sidecar exists");

    reader = await KvJournal.open(path);
    const following = collect(reader, "s", 20 + 64);
    const committed = await Promise.all(
      Array.from({ length: 64 }, (_, call) => writer.append("s", [{ kind: "tool_returned", call: 20 + call }])),
    );
    assert.deepEqual(
      (await following).slice(20).map((record) => record.sequence),
      committed.flat().map((record) => record.sequence),
      "coalesced rewrites still wake the follower for the last commit",
    );
  } finally {
    await Promise.all([writer.close(), reader?.close()]);
  }
});

Deno.test("KvJournal.subscribe sees a commit its writer could not announce: a writer without permission for the sidecar, and writers killed right after their commit", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  const journal = await KvJournal.open(path);
  try {
    await journal.createSession(session("w"));
    const denied = until(journalRecords(journal, "w"), (seen) => seen.length === 1, "the unannounced commit");
    denied.catch(() => {});
    // Write permission for the KV file alone: the writer commits, and cannot rewrite `<path>.wake`.
    const writer = await runDeno([
      "run",
      `--allow-read=${dir}`,
      `--allow-write=${path}`,
      "tests/e2e/fixtures/writer.ts",
      path,
      "child",
      "1",
    ]);
    assert.equal(writer.code, 0, new TextDecoder().decode(writer.stderr));
    await denied;
    for (let round = 0; round < 4; round++) {
      const id = `killed-${round}`;
      await journal.createSession(session(id));
      const followed = until(journalRecords(journal, id), (seen) => seen.length === 1, `round ${round}'s commit`);
      followed.catch(() => {});
      const killed = await runDeno(["run", "--allow-read=.", "--allow-write=.tmp", DIES, path, id]);
      assert.equal(killed.signal, "SIGKILL");
      await followed;
    }
  } finally {
    await journal.close();
  }
});
