import assert from "node:assert/strict";
import { checkedJournal } from "../../src/journal/checked_journal.ts";
import type { Journal } from "../../src/journal/journal.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { MemoryJournal } from "../../src/journal/memory.ts";
import type { RecordBody } from "../../src/journal/records.ts";
import { hasCode } from "../_support/has_code.ts";

class Subclassed extends MemoryJournal {}

Deno.test("Brain's own stores are used as they are; a subclass, Proxy or patched instance of one is checked", async () => {
  const memory = new MemoryJournal();
  await using kv = Object.assign(await KvJournal.open(":memory:"), { [Symbol.asyncDispose]: () => kv.close() });
  assert.equal(checkedJournal(memory, 1_000), memory);
  assert.equal(checkedJournal(kv, 1_000), kv);

  const proxied = new MemoryJournal();
  const patched = new MemoryJournal();
  patched.read = () => Promise.resolve("records" as never);
  const others: [string, Journal][] = [
    ["a subclass", new Subclassed()],
    ["a Proxy", withAppend(proxied, proxied.append.bind(proxied))],
    ["a patched instance", patched],
  ];
  for (const [what, journal] of others) {
    const checked = checkedJournal(journal, 1_000);
    assert.notEqual(checked, journal, `${what} is checked`);
    await checked.close();
  }
  await assert.rejects(checkedJournal(patched, 1_000).read("s"), hasCode("journal_corrupt"));
});

/** `memory` with its append replaced by `append`. */
function withAppend(memory: MemoryJournal, append: Journal["append"]): Journal {
  return new Proxy(memory, {
    get: (target, key) => {
      if (key === "append") return append;
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

Deno.test("a checked journal takes commits under a lease answered out of order, and refuses one numbered before an earlier answer", async () => {
  const memory = new MemoryJournal();
  const answers: PromiseWithResolvers<void>[] = [];
  let replay = false;
  const journal = checkedJournal(
    withAppend(memory, async (...args) => {
      if (replay) return await memory.read("s", { from: 2 });
      const records = await memory.append(...args);
      const answer = Promise.withResolvers<void>();
      answers.push(answer);
      await answer.promise;
      return records;
    }),
    1_000,
  );
  await journal.createSession({ id: "s", createdAt: Date.now(), tools: [] });
  const lease = await journal.acquire("s", { owner: "o", ttlMs: 1_000 });
  const body: RecordBody = { kind: "user_message", content: "x" };
  const first = journal.append("s", [body], { lease });
  const second = journal.append("s", [body], { lease });
  while (answers.length < 2) await new Promise((resolve) => setTimeout(resolve, 0));
  answers[1].resolve();
  await second;
  answers[0].resolve();
  assert.deepEqual([(await first)[0].sequence, (await second)[0].sequence], [1, 2]);
  // A later commit answered as record 2 again: the journal numbered two commits alike.
  replay = true;
  await assert.rejects(journal.append("s", [body], { lease }), hasCode("journal_corrupt"));
  await journal.close();
  await memory.close();
});
