import assert from "node:assert/strict";
import { KvJournal } from "../../src/journal/kv.ts";
import type { RecordBody } from "../../src/journal/records.ts";
import { lines } from "../_support/lines.ts";
import { scratchDir } from "../_support/scratch.ts";
import { spawnDeno } from "../_support/spawn_deno.ts";

const dir = scratchDir("kv_delete_test");
const file = () => `${dir}/${crypto.randomUUID()}.kv`;
const session = (id: string) => ({ id, createdAt: Date.now(), tools: [] });

/** Fills session `s` with enough records, some stored in chunks and some opening calls, that deleting it takes a while. */
async function fill(journal: KvJournal): Promise<void> {
  await journal.createSession(session("s"));
  for (let batch = 0; batch < 10; batch++) {
    const bodies: RecordBody[] = Array.from(
      { length: 300 },
      (_, n) => ({ kind: "tool_event", call: 0, event: "e", data: n }),
    );
    bodies.push({ kind: "tool_call_started", tool: "t", input: {} } as RecordBody);
    await journal.append("s", bodies);
    await journal.append("s", [{ kind: "tool_event", call: 0, event: "big", data: "z".repeat(130_000) }]);
  }
}

/** The keys of session `s` left in the file, any incarnation: records, open calls, chunks, pending marks, delete marks. */
async function leftovers(path: string): Promise<Deno.KvKey[]> {
  const kv = await Deno.openKv(path);
  try {
    const found: Deno.KvKey[] = [];
    for (const prefix of [["record", "s"], ["open", "s"], ["chunk", "s"], ["pending", "s"], ["doomed", "s"]]) {
      for await (const entry of kv.list({ prefix })) found.push(entry.key);
    }
    return found;
  } finally {
    kv.close();
  }
}

Deno.test("KvJournal: a session created again while another journal still deletes the old one keeps every acknowledged record", async () => {
  // Repeated until the new incarnation's append was acknowledged while the delete still ran: that is the case under test.
  for (let round = 0; round < 5; round++) {
    const path = file();
    const [a, b] = [await KvJournal.open(path), await KvJournal.open(path)];
    try {
      await fill(a);
      let deleted = false;
      const deleting = a.deleteSession("s").then(() => deleted = true);
      while (await b.getSession("s")) await new Promise((resolve) => setTimeout(resolve, 1));
      await b.createSession(session("s"));
      const acknowledged = await b.append("s", [
        { kind: "tool_event", call: 0, event: "small", data: 1 },
        { kind: "tool_event", call: 0, event: "big", data: "y".repeat(130_000) },
      ]);
      const raced = !deleted;
      await deleting;
      assert.deepEqual(await b.read("s"), acknowledged, "the new incarnation keeps its records and their chunks");
      assert.deepEqual(await a.read("s"), acknowledged);
      if (raced) return;
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }
  assert.fail("the delete never ran long enough for the new incarnation to commit meanwhile");
});

Deno.test("KvJournal: a delete SIGKILLed half-way is finished by the next open, leaving nothing of the session", async () => {
  // Repeated until the kill landed after the head was gone but before everything else was: that is the case under test.
  for (let round = 0; round < 5; round++) {
    const path = file();
    const journal = await KvJournal.open(path);
    try {
      await fill(journal);
      await using child = spawnDeno(
        ["run", "--quiet", "--allow-read=.", "--allow-write=.tmp", "tests/journal/fixtures/delete.ts", path],
        { stdout: "piped" },
      );
      const said = lines(child.stdout);
      assert.equal((await said.next()).value, "deleting");
      while (await journal.getSession("s")) await new Promise((resolve) => setTimeout(resolve, 1));
      child.kill("SIGKILL");
      await child.status;
      await said.return(undefined);
    } finally {
      await journal.close();
    }
    if ((await leftovers(path)).length === 0) continue;
    const reopened = await KvJournal.open(path);
    try {
      assert.deepEqual(await leftovers(path), [], "the reopened journal finished the delete");
      assert.equal(await reopened.getSession("s"), undefined);
      await reopened.createSession(session("s"));
      assert.deepEqual(await reopened.read("s"), [], "a new incarnation starts empty");
    } finally {
      await reopened.close();
    }
    return;
  }
  assert.fail("the kill never landed in the middle of the delete");
});
