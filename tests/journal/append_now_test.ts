import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { MemoryJournal } from "../../src/journal/memory.ts";
import { appendNowOf, firstSequence, type Journal } from "../../src/journal/journal.ts";
import type { JournalRecord, RecordBody } from "../../src/journal/records.ts";
import type { AppendOptions } from "../../src/journal/lease.ts";

const add = tool({
  name: "add",
  description: "Add.",
  input: z.object({ a: z.number(), b: z.number() }),
  run: ({ a, b }, ctx) => ctx.finish(a + b),
});

/** A memory journal that counts its appends, as a test double would. */
class CountingJournal extends MemoryJournal {
  appends = 0;
  override append(sessionId: string, bodies: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]> {
    this.appends++;
    return super.append(sessionId, bodies, options);
  }
}

Deno.test("the memory journal's synchronous append commits what append commits, numbered the same way", async () => {
  const journal = new MemoryJournal();
  await journal.createSession({ id: "s", createdAt: Date.now(), tools: [] });
  const now = appendNowOf(journal);
  assert.ok(now);
  const input = { items: [1] };
  const answered = now("s", [{ kind: "tool_call_started", tool: "t", input, activation: "a" }], (first, at) => ({
    first,
    at,
  }));
  assert.equal(answered.first, 1);
  // What the journal keeps is its own copy: the caller's later change to the body is not committed.
  input.items.push(2);
  const [finished] = await journal.append("s", [{
    kind: "tool_call_finished",
    call: 1,
    cause: "finish",
    outcome: { status: "ok", value: null },
  }]);
  assert.equal(finished.sequence, 2);
  assert.throws(
    () =>
      now(
        "s",
        [{ kind: "tool_call_finished", call: 1, cause: "finish", outcome: { status: "ok", value: 1 } }],
        firstSequence,
      ),
    (error: Error & { code?: string }) => error.code === "call_finished",
  );
  const records = await journal.read("s");
  const started = { kind: "tool_call_started", tool: "t", input: { items: [1] }, activation: "a" };
  assert.deepEqual(records, [{ ...started, sessionId: "s", sequence: 1, at: answered.at }, finished]);
  assert.ok(Object.isFrozen(records[0]) && Object.isFrozen((records[0] as { input: unknown }).input));
});

Deno.test("a journal that replaces append keeps every commit of a call going through it", async () => {
  const counting = new CountingJournal();
  assert.equal(appendNowOf(counting), undefined);
  const memory = new MemoryJournal();
  const proxied = new Proxy(memory, {
    get: (target, key) => key === "append" ? () => Promise.reject(new Error("refused")) : Reflect.get(target, key),
  });
  assert.equal(appendNowOf(proxied as Journal), undefined);
  assert.equal(appendNowOf({ ...memory } as unknown as Journal), undefined);

  await using brain = new Brain({ journal: counting });
  const session = await brain.sessions.create({ tools: [add()] });
  const before = counting.appends;
  const end = await session.call("add", { a: 1, b: 2 });
  assert.deepEqual(end.outcome, { status: "ok", value: 3 });
  // The intent, then the result with the finish: every commit reached the replaced append.
  assert.equal(counting.appends - before, 2);
});
