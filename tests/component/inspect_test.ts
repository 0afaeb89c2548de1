import assert from "node:assert/strict";
import type { BrainSession } from "../../mod.ts";
import { inspectTool, reader, readerBrain } from "../_support/components.ts";
import { soon } from "../_support/deadline.ts";

const WASI_NOT_PERMITTED = 31;

async function withInspect(
  depth: number,
  body: (session: BrainSession, workspace: string) => Promise<void>,
  maxEmittedBytes?: number,
): Promise<void> {
  await using brain = readerBrain(maxEmittedBytes ? { maxEmittedBytes } : {});
  const session = await brain.sessions.create({ tools: [inspectTool()({ env: reader, depth })] });
  const workspace = session.workspace("reader")!;
  await Deno.mkdir(`${workspace}/a/b/c`, { recursive: true });
  await Deno.writeTextFile(`${workspace}/a/one.txt`, "1");
  await Deno.writeTextFile(`${workspace}/a/b/two.txt`, "2");
  await body(session, workspace);
}

/** Deno.symlink needs unscoped read and write; the test task grants `ln` instead. */
async function symlink(target: string, path: string): Promise<void> {
  const { success } = await new Deno.Command("ln", { args: ["-s", target, path] }).output();
  assert.ok(success, `ln -s ${target} ${path}`);
}

function refusedErrno(outcome: unknown): number | undefined {
  const { status, error } = outcome as { status: string; error?: { code: string; details?: { errno?: number } } };
  return status === "error" && error?.code === "fs_error" ? error.details?.errno : undefined;
}

Deno.test("inspect lists its workspace to the given depth", async () => {
  await withInspect(2, async (session) => {
    const end = await session.call("inspect", { path: "a" }, { deadline: soon() });
    assert.equal(end.outcome.status, "ok");
    const value = end.outcome.status === "ok" ? end.outcome.value as { entries: string[] } : { entries: [] };
    assert.deepEqual(value.entries, ["b/", "b/c/", "b/two.txt", "one.txt"]);
  });
  await withInspect(1, async (session) => {
    const end = await session.call("inspect", { path: "." }, { deadline: soon() });
    assert.deepEqual(end.outcome.status === "ok" && end.outcome.value, { eventSequence: 2, entries: ["a/"] });
  });
});

Deno.test("inspect's emit returns the committed sequence of its Event", async () => {
  await withInspect(1, async (session) => {
    const end = await session.call("inspect", { path: "a" }, { deadline: soon() });
    const records = await session.read();
    const event = records.find((r) => r.kind === "tool_event")!;
    assert.equal(event.kind === "tool_event" && event.event, "inspect_started");
    assert.equal(end.outcome.status, "ok");
    assert.equal((end.outcome as unknown as { value: { eventSequence: number } }).value.eventSequence, event.sequence);
  });
});

Deno.test("inspect cannot read outside its workspace through ../ or absolute paths", async () => {
  await withInspect(1, async (session) => {
    for (const path of ["..", "../..", "a/../../", "/", "/etc", "/tmp"]) {
      const end = await session.call("inspect", { path }, { deadline: soon() });
      assert.equal(refusedErrno(end.outcome), WASI_NOT_PERMITTED, `${path}: ${JSON.stringify(end.outcome)}`);
    }
  });
});

Deno.test("inspect cannot follow a symlink out of its workspace", async () => {
  const outside = await Deno.makeTempDir({ dir: ".tmp", prefix: "outside-" });
  try {
    await Deno.writeTextFile(`${outside}/secret.txt`, "secret");
    await withInspect(3, async (session, workspace) => {
      await symlink(await Deno.realPath(outside), `${workspace}/out`);
      await symlink("../../..", `${workspace}/a/up`);
      const direct = await session.call("inspect", { path: "out" }, { deadline: soon() });
      assert.equal(refusedErrno(direct.outcome), WASI_NOT_PERMITTED, JSON.stringify(direct.outcome));
      const up = await session.call("inspect", { path: "a/up" }, { deadline: soon() });
      assert.equal(refusedErrno(up.outcome), WASI_NOT_PERMITTED, JSON.stringify(up.outcome));
      // A listing names links but never descends through them.
      const listing = await session.call("inspect", { path: "." }, { deadline: soon() });
      assert.equal(listing.outcome.status, "ok");
      assert.ok(!JSON.stringify(listing.outcome).includes("secret"), JSON.stringify(listing.outcome));
    });
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("inspect's result cannot exceed BRAIN_MAX_EMITTED_BYTES and is never committed", async () => {
  await withInspect(3, async (session, workspace) => {
    for (let i = 0; i < 20; i++) await Deno.writeTextFile(`${workspace}/a/file-with-a-long-name-${i}.txt`, "");
    const end = await session.call("inspect", { path: "a" }, { deadline: soon() });
    assert.equal(end.outcome.status === "error" && end.outcome.error.code, "budget_exceeded");
    const records = await session.read();
    assert.ok(!records.some((r) => r.kind === "tool_result"));
    assert.ok(records.some((r) => r.kind === "tool_event"));
  }, 300);
});
