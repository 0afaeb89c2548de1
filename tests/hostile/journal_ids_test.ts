import assert from "node:assert/strict";
import type { Journal } from "../../mod.ts";
import { KvJournal, MemoryJournal, PostgresJournal } from "../../src/journal/mod.ts";
import { Brain } from "../../mod.ts";
import { scratchDir } from "../_support/scratch.ts";
import { hasCode } from "../_support/has_code.ts";

const dir = scratchDir("hostile_journal_ids");
const stores: [string, () => Promise<Journal>][] = [
  ["memory", () => Promise.resolve(new MemoryJournal())],
  ["kv", () => KvJournal.open(`${dir}/${crypto.randomUUID()}.kv`)],
];
const nested = (levels: number) => {
  let value: unknown = 1;
  for (let level = 0; level < levels; level++) value = [value];
  return value;
};

Deno.test("hostile journal metadata: ids that are not session ids and nesting past MAX_JSON_DEPTH are invalid_argument in every store", async () => {
  for (const [store, open] of stores) {
    const journal = await open();
    try {
      const metas: [string, unknown][] = [
        ["an empty id", { id: "", createdAt: 1, tools: [] }],
        ["a 10 000 character id", { id: "x".repeat(10_000), createdAt: 1, tools: [] }],
        ["a lone surrogate id", { id: "\ud800", createdAt: 1, tools: [] }],
        ["a path id", { id: "../x", createdAt: 1, tools: [] }],
        ["5 000 levels", { id: "deep", createdAt: 1, tools: [], extra: nested(5_000) }],
      ];
      for (const [what, meta] of metas) {
        await assert.rejects(journal.createSession(meta as never), hasCode("invalid_argument"), `${store}: ${what}`);
      }
      assert.deepEqual(await journal.listSessions(), [], `${store}: nothing was stored`);
      // A key the store cannot hold is the caller's argument: refused, never a failure to retry.
      await assert.rejects(journal.read("x".repeat(10_000)), (error) => {
        return error instanceof Error && !hasCode("storage_unavailable")(error);
      }, `${store}: a read of a 10 000 character id`);
      await journal.createSession({ id: "app~s", createdAt: 1, tools: [] });
      assert.equal((await journal.getSession("app~s"))?.id, "app~s", `${store}: a host's session key is an id`);
    } finally {
      await journal.close();
    }
  }
});

Deno.test("hostile PostgreSQL options: a URL the driver cannot read and bad options are invalid_argument before connecting", async () => {
  await assert.rejects(Brain.open({ url: "postgres://%%%" }), hasCode("invalid_argument"), "a malformed %-escape");
  for (const options of [{ maxConnections: 0 }, { maxConnections: NaN }, { maxConections: 5 }]) {
    await assert.rejects(
      PostgresJournal.open("postgres://u:p@127.0.0.1:1/db", options as never),
      hasCode("invalid_argument"),
      JSON.stringify(options),
    );
  }
});

Deno.test("hostile KV paths: a lone surrogate is invalid_argument, never a file opened under U+FFFD", async () => {
  for (const path of [`${dir}/\ud800.kv`, `${dir}/a\udc00b.kv`]) {
    await assert.rejects(KvJournal.open(path), hasCode("invalid_argument"), JSON.stringify(path));
    await assert.rejects(Brain.open({ path }), hasCode("invalid_argument"), `Brain.open ${JSON.stringify(path)}`);
  }
  const made = [];
  for await (const entry of Deno.readDir(dir)) if (entry.name.includes("\ufffd")) made.push(entry.name);
  assert.deepEqual(made, [], "no file was made under another name");
});
