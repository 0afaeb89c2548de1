import assert from "node:assert/strict";
import { KvJournal } from "../../src/journal/kv.ts";
import { scratchDir } from "../_support/scratch.ts";
import { runDeno } from "../_support/spawn_deno.ts";

const dir = scratchDir("writers_test");
const PER_WRITER = 500;

Deno.test("two processes appending to one KV session never take the same sequence", async () => {
  const path = `${dir}/shared.kv`;
  const journal = await KvJournal.open(path);
  try {
    await journal.createSession({ id: "w", createdAt: Date.now(), tools: [] });
    const writers = ["a", "b"].map((writer) =>
      runDeno(
        ["run", "--allow-read=.", "--allow-write=.tmp", "tests/e2e/fixtures/writer.ts", path, writer, `${PER_WRITER}`],
        { stdout: "null" },
      )
    );
    for (const output of await Promise.all(writers)) {
      assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    }
    const records = await journal.read("w");
    assert.deepEqual(records.map((record) => record.sequence), records.map((_, index) => index + 1));
    for (const writer of ["a", "b"]) {
      const mine = records.flatMap((record) =>
        record.kind === "tool_event" && record.event === writer ? [record.data] : []
      );
      assert.deepEqual(mine, Array.from({ length: PER_WRITER }, (_, n) => n), `writer ${writer}: each once, in order`);
    }
  } finally {
    await journal.close();
  }
});
