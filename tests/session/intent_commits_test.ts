import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { MemoryJournal } from "../../src/journal/memory.ts";
import type { AppendOptions } from "../../src/journal/lease.ts";
import type { JournalRecord, RecordBody } from "../../src/journal/records.ts";
import { BrainError } from "../../src/outcome/errors.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";

/** A memory journal that counts its appends, and refuses as `refuse` says. */
class WatchedJournal extends MemoryJournal {
  appends: RecordBody[][] = [];
  refuse: (bodies: RecordBody[]) => BrainError | undefined = () => undefined;

  override append(sessionId: string, bodies: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]> {
    this.appends.push(bodies);
    const refused = this.refuse(bodies);
    return refused ? Promise.reject(refused) : super.append(sessionId, bodies, options);
  }
}

const echo = tool({
  name: "echo",
  description: "Echoes its input.",
  input: z.object({ n: z.number() }),
  run: (input, ctx) => ctx.finish(input.n),
});

const intents = (journal: WatchedJournal) =>
  journal.appends.filter((bodies) => bodies.every((body) => body.kind === "tool_call_started"));

Deno.test("the intents of calls a session starts in one tick are committed in one append, each call then runs once", async () => {
  const journal = new WatchedJournal();
  await using brain = new Brain({ journal });
  const session = await brain.sessions.create({ tools: [echo()] });
  journal.appends = [];
  const ends = await Promise.all(Array.from({ length: 10 }, (_, n) => session.call("echo", { n })));
  assert.deepEqual(
    ends.map(({ outcome }) => outcome),
    Array.from({ length: 10 }, (_, n) => ({ status: "ok", value: n })),
  );
  assert.deepEqual(intents(journal).map((bodies) => bodies.length), [10]);
  const records = await session.read();
  const started = records.filter((record) => record.kind === "tool_call_started");
  const finished = records.filter((record) => record.kind === "tool_call_finished");
  assert.equal(started.length, 10);
  assert.deepEqual(
    finished.map((record) => record.kind === "tool_call_finished" && record.call).sort(),
    ends.map((end) => end.call).sort(),
  );
  // A call alone is one append of one intent.
  journal.appends = [];
  await session.call("echo", { n: 1 });
  assert.deepEqual(intents(journal).map((bodies) => bodies.length), [1]);
});

Deno.test("a batch the journal refuses before writing is committed one intent at a time: only the bad intent fails", async () => {
  const journal = new WatchedJournal();
  await using brain = new Brain({ journal });
  const session = await brain.sessions.create({ tools: [echo()] });
  const tooLarge = (body: RecordBody) => body.kind === "tool_call_started" && (body.input as { n: number }).n === 3;
  journal.refuse = (bodies) =>
    bodies.some(tooLarge) ? new BrainError("payload_too_large", "intent 3 is too large for this store") : undefined;
  journal.appends = [];
  const settled = await Promise.allSettled(Array.from({ length: 5 }, (_, n) => session.call("echo", { n })));
  assert.deepEqual(settled.map(({ status }) => status), [
    "fulfilled",
    "fulfilled",
    "fulfilled",
    "rejected",
    "fulfilled",
  ]);
  assert.ok(hasCode("payload_too_large")((settled[3] as PromiseRejectedResult).reason));
  assert.deepEqual(intents(journal).map((bodies) => bodies.length), [5, 1, 1, 1, 1, 1]);
  const started = (await session.read()).filter((record) => record.kind === "tool_call_started");
  assert.deepEqual(started.map((record) => record.kind === "tool_call_started" && record.input), [
    { n: 0 },
    { n: 1 },
    { n: 2 },
    { n: 4 },
  ]);
});

Deno.test("a batch the store fails is every call's failure, never tried again (it may have been written)", async () => {
  const journal = new WatchedJournal();
  await using brain = new Brain({ journal });
  const session = await brain.sessions.create({ tools: [echo()] });
  journal.refuse = (bodies) =>
    bodies.some((body) => body.kind === "tool_call_started")
      ? new BrainError("storage_unavailable", "the store is down")
      : undefined;
  journal.appends = [];
  const settled = await Promise.allSettled(Array.from({ length: 4 }, (_, n) => session.call("echo", { n })));
  assert.ok(settled.every((result) => result.status === "rejected" && hasCode("storage_unavailable")(result.reason)));
  assert.deepEqual(intents(journal).map((bodies) => bodies.length), [4]);
  journal.refuse = () => undefined;
  assert.equal((await session.read()).filter((record) => record.kind === "tool_call_started").length, 0);
});

Deno.test("the start frames a remote client sends in one message commit their intents in one append on the server", async () => {
  const journal = new WatchedJournal();
  await using server = await servedBrain({ serverToken: "operator", journal });
  await using brain = new Brain({ url: server.url, serverToken: "operator", token: "t", host: "batching" });
  const session = await brain.sessions.create({ tools: [echo()] });
  journal.appends = [];
  const ends = await Promise.all(Array.from({ length: 16 }, (_, n) => session.call("echo", { n })));
  assert.deepEqual(
    ends.map(({ outcome }) => outcome),
    Array.from({ length: 16 }, (_, n) => ({ status: "ok", value: n })),
  );
  assert.deepEqual(intents(journal).map((bodies) => bodies.length), [16]);
});
