import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { hasCode } from "../_support/has_code.ts";
import { lines } from "../_support/lines.ts";
import { scratchDir } from "../_support/scratch.ts";
import { spawnDeno } from "../_support/spawn_deno.ts";
import { withDeadline } from "../_support/deadline.ts";
import { journalViolations } from "../chaos/invariants.ts";

const dir = scratchDir("kv_locked");

/** A process holding the write lock of the KV file at `path` (a commit in progress), stopped once it holds it. */
async function pausedMidCommit(path: string): Promise<Deno.ChildProcess> {
  const child = spawnDeno([
    "run",
    "--quiet",
    `--allow-read=${dir}`,
    `--allow-write=${dir}`,
    "tests/journal/fixtures/kv_locker.ts",
    path,
  ], {
    stdout: "piped",
    stderr: "inherit",
  });
  const said = await lines(child.stdout).next();
  assert.equal(said.value, "locked");
  child.kill("SIGSTOP");
  return child;
}

const waits = tool({
  name: "waits",
  description: "Waits for its end.",
  input: z.object({}),
  run: (_input, ctx) => new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve(undefined))),
});
const quick = tool({
  name: "quick",
  description: "Finishes at once.",
  input: z.object({}),
  run: (_input, ctx) => ctx.finish("quick"),
});

Deno.test({
  name:
    "a Brain on a KV file another process holds locked while paused mid-commit: its caller settles by the deadline + 2 s, close() returns, and once that process is gone the next Brain ends the call once and keeps every acknowledged record",
  // The paused lock holds the first Brain's last commits inside Deno KV until the locker dies; they settle after close.
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const path = `${dir}/locked.kv`;
    const brain = await Brain.open({ path, leaseMs: 500 });
    const session = await brain.sessions.create({ id: "s", tools: [waits(), quick()] });
    assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
    const acknowledged = await session.read();
    const deadline = Date.now() + 1_000;
    const call = await session.start("waits", {}, { deadline });
    const locker = await pausedMidCommit(path);
    try {
      await assert.rejects(call.ended, hasCode("storage_unavailable"));
      assert.ok(Date.now() <= deadline + 2_000, `the caller settled ${Date.now() - deadline} ms after its deadline`);
      await withDeadline(brain.close(), "close() on a locked file", 5_000);
    } finally {
      locker.kill("SIGKILL");
      await locker.status;
    }
    await using next = await Brain.open({ path, leaseMs: 500 });
    const taken = await next.sessions.get("s", { tools: [waits(), quick()], waitMs: 5_000 });
    assert.deepEqual((await taken.call("quick", {})).outcome, { status: "ok", value: "quick" });
    const records = await taken.read();
    assert.deepEqual(records.slice(0, acknowledged.length), acknowledged, "every acknowledged record kept");
    assert.deepEqual(journalViolations(records), []);
    const ends = records.filter((record) => record.kind === "tool_call_finished" && record.call === call.sequence);
    assert.equal(ends.length, 1, "the call has one terminal record");
  },
});
