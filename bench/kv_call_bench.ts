/**
 * A journaled Tool call on a Deno KV file against the floor of its store: the
 * call's three records (intent, result, finish) written with three bare
 * `kv.set`s (the baseline), and inserted into SQLite through `node:sqlite` in
 * WAL mode with full sync (an acknowledged insert survives a crash), each in
 * its own transaction. Run with `deno task bench`.
 */
import { z } from "zod";
import { Brain, tool } from "../mod.ts";
import type { RecordBody } from "../src/journal/records.ts";

const dir = `.tmp/kv_call_bench-${crypto.randomUUID()}`;
await Deno.mkdir(dir, { recursive: true });
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));

const add = tool({
  name: "add",
  description: "Add.",
  input: z.object({ a: z.number(), b: z.number() }),
  output: z.number(),
  run: ({ a, b }, ctx) => ctx.finish(a + b),
});
const brain = await Brain.open({ path: `${dir}/brain.kv` });
const session = await brain.sessions.create({ tools: [add()] });

const records: RecordBody[] = [
  { kind: "tool_call_started", tool: "add", input: { a: 1, b: 2 }, activation: crypto.randomUUID() },
  { kind: "tool_result", call: 1, outcome: { status: "ok", value: 3 } },
  { kind: "tool_call_finished", call: 1, cause: "finish", outcome: { status: "ok", value: 3 } },
];
const encoder = new TextEncoder();
const bare = await Deno.openKv(`${dir}/bare.kv`);
let key = 0;

// The @types/node the lock resolves predates node:sqlite, so the two calls used here are typed by hand.
interface Sqlite {
  exec(sql: string): void;
  prepare(sql: string): { run(...values: unknown[]): unknown };
}
const sqliteModule = "node:sqlite";
const { DatabaseSync } = await import(sqliteModule) as { DatabaseSync: new (path: string) => Sqlite };
const sqlite = new DatabaseSync(`${dir}/bare.sqlite`);
sqlite.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;");
sqlite.exec("CREATE TABLE record (session TEXT, sequence INTEGER, body BLOB, PRIMARY KEY (session, sequence))");
const insert = sqlite.prepare("INSERT INTO record (session, sequence, body) VALUES (?, ?, ?)");

async function bareSets(): Promise<void> {
  for (const body of records) await bare.set(["record", "s", ++key], encoder.encode(JSON.stringify(body)));
}
function sqliteInserts(): void {
  for (const body of records) insert.run("s", ++key, encoder.encode(JSON.stringify(body)));
}
async function brainCall(): Promise<void> {
  await session.call("add", { a: 1, b: 2 });
}

// A store's first writes grow its SQLite and WAL files, which costs more than the writes that follow;
// without this, whichever bench runs first measures file growth rather than its store.
for (let index = 0; index < 500; index++) {
  await bareSets();
  sqliteInserts();
  await brainCall();
}

Deno.bench("bare kv.set of a call's three records", { group: "KV call", baseline: true }, bareSets);

Deno.bench("node:sqlite insert of a call's three records (WAL, synchronous FULL)", { group: "KV call" }, sqliteInserts);

Deno.bench("journaled call on a Brain over a KV file", { group: "KV call" }, brainCall);

Deno.bench(
  "bare kv.set of three records, 64 calls at once",
  { group: "64 concurrent KV calls", baseline: true },
  async () => {
    await Promise.all(Array.from({ length: 64 }, bareSets));
  },
);

Deno.bench(
  "journaled calls on a KV file, 64 at once (shared commits)",
  { group: "64 concurrent KV calls" },
  async () => {
    await Promise.all(Array.from({ length: 64 }, brainCall));
  },
);
