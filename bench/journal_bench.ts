/**
 * Commits per second: the memory journal and the Deno KV journal against a
 * bare `kv.set` loop on the same kind of file; and how long a commit takes to
 * reach a subscriber on a second journal of the file, against one on the
 * same journal. Run with `deno task bench`.
 */
import type { RecordBody } from "../src/journal/records.ts";
import { KvJournal } from "../src/journal/kv.ts";
import { MemoryJournal } from "../src/journal/memory.ts";

const dir = `.tmp/journal_bench-${crypto.randomUUID()}`;
await Deno.mkdir(dir, { recursive: true });
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));

const body: RecordBody = { kind: "tool_event", call: 1, event: "tick", data: { n: 1, note: "a small event" } };
const bare = await Deno.openKv(`${dir}/bare.kv`);
const memory = new MemoryJournal();
const kv = await KvJournal.open(`${dir}/journal.kv`);
for (const journal of [memory, kv]) await journal.createSession({ id: "s", createdAt: Date.now(), tools: [] });
let key = 0;

// A store's first writes grow its SQLite and WAL files; warm both so neither bench measures that.
for (let index = 0; index < 1_000; index++) {
  await bare.set(["record", "s", ++key], body);
  await kv.append("s", [body]);
}

Deno.bench("bare kv.set of one record", { group: "one commit", baseline: true }, async () => {
  await bare.set(["record", "s", ++key], body);
});

Deno.bench("MemoryJournal.append", { group: "one commit" }, async () => {
  await memory.append("s", [body]);
});

Deno.bench("KvJournal.append (version-checked atomic commit)", { group: "one commit" }, async () => {
  await kv.append("s", [body]);
});

Deno.bench("bare kv.set, 16 at once", { group: "16 concurrent commits", baseline: true }, async () => {
  await Promise.all(Array.from({ length: 16 }, () => bare.set(["record", "s", ++key], body)));
});

Deno.bench("KvJournal.append, 16 at once (shared commits)", { group: "16 concurrent commits" }, async () => {
  await Promise.all(Array.from({ length: 16 }, () => kv.append("s", [body])));
});

// Latency from a commit to a subscriber that is already waiting: on the same journal instance (woken by its own
// commit) against a second instance of the same file (woken by the head-key watch or the sidecar wake file).
const writer = await KvJournal.open(`${dir}/follow.kv`);
const second = await KvJournal.open(`${dir}/follow.kv`);
for (const id of ["same", "second"]) await writer.createSession({ id, createdAt: Date.now(), tools: [] });
const sameInstance = writer.subscribe("same")[Symbol.asyncIterator]();
const secondInstance = second.subscribe("second")[Symbol.asyncIterator]();

/** Commits one record and waits until `subscriber` yields it. */
async function commitAndSee(session: string, subscriber: AsyncIterator<unknown>): Promise<void> {
  const [, seen] = await Promise.all([writer.append(session, [body]), subscriber.next()]);
  if (seen.done) throw new Error("the subscription ended");
}

Deno.bench(
  "commit to a subscriber on the same KvJournal",
  { group: "commit to subscriber", baseline: true },
  async () => await commitAndSee("same", sameInstance),
);

Deno.bench(
  "commit to a subscriber on a second KvJournal of the file",
  { group: "commit to subscriber" },
  async () => await commitAndSee("second", secondInstance),
);
