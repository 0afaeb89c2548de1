import assert from "node:assert/strict";
import { follow } from "../../src/journal/follow.ts";
import { CommitNotifier } from "../../src/journal/notifier.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { BrainError } from "../../src/outcome/errors.ts";

const record = (sequence: number) =>
  ({ kind: "tool_returned", call: 1, sessionId: "s", sequence, at: 0 }) as JournalRecord;

Deno.test("follow reads again after a store failed for a moment, and ends on any other error", async () => {
  const notifier = new CommitNotifier();
  const committed = [record(1)];
  let reads = 0;
  const read = (_id: string, { from = 1 }) => {
    reads++;
    // The read after the first commit's wake fails as a dropped database connection does.
    if (reads === 2) return Promise.reject(new BrainError("storage_unavailable", "connection dropped"));
    return Promise.resolve(committed.filter((entry) => entry.sequence >= from));
  };
  const controller = new AbortController();
  const seen: number[] = [];
  const following = (async () => {
    for await (const entry of follow(read, () => notifier.wakes("s"), "s", { signal: controller.signal })) {
      seen.push(entry.sequence);
      if (entry.sequence === 1) {
        committed.push(record(2));
        notifier.notify("s");
      }
      if (entry.sequence === 2) controller.abort();
    }
  })();
  await following;
  assert.deepEqual(seen, [1, 2]);
  assert.equal(reads, 3, "the failed read was made again");

  const failing = () => Promise.reject(new BrainError("session_not_found", "deleted"));
  await assert.rejects(
    (async () => {
      for await (const _ of follow(failing, () => notifier.wakes("s"), "s")) { /* nothing */ }
    })(),
    (error) => error instanceof BrainError && error.code === "session_not_found",
  );
});
