/**
 * Component sandboxes are child processes Brain kills for certain: a runaway
 * guest's process is gone within 250 ms of its call's end, and nothing is left
 * behind after `brain.close()`. Each case ends with a typed outcome.
 */
import assert from "node:assert/strict";
import type { BrainOptions, BrainSession } from "../../mod.ts";
import { probeTool, reader, readerBrain } from "../_support/components.ts";
import { runningChildren, runningSandboxes, within } from "../_support/processes.ts";
import { until } from "../_support/until.ts";
import { soon } from "../_support/deadline.ts";

const KILLED_WITHIN_MS = 250;

async function withProbes(
  names: string[],
  body: (session: BrainSession) => Promise<void>,
  options: BrainOptions = {},
) {
  const brain = readerBrain(options);
  try {
    const session = await brain.sessions.create({ tools: names.map((name) => probeTool(name)({ env: reader })) });
    await body(session);
  } finally {
    await brain.close();
  }
  assert.deepEqual(await runningSandboxes(), [], "no sandbox outlives brain.close()");
  assert.deepEqual(await runningChildren("reaper_main.ts"), [], "nor does the reaper");
}

/** The pid of the sandbox whose guest spins: once its Event is committed, the one on a CPU. */
async function spinningPid(session: BrainSession): Promise<number> {
  await until(session, (records) => records.some((r) => r.kind === "tool_event"), "the guest to emit");
  let pids: number[] = [];
  await within(5_000, "a guest to spin", async () => (pids = await runningSandboxes(true)).length === 1);
  return pids[0];
}

/** The pid of the session's one warm sandbox. */
async function warmPid(): Promise<number> {
  let pids: number[] = [];
  await within(5_000, "a sandbox to start", async () => (pids = await runningSandboxes()).length === 1);
  return pids[0];
}

async function gone(pid: number): Promise<void> {
  await within(KILLED_WITHIN_MS, `sandbox ${pid} to be killed`, async () => !(await runningSandboxes()).includes(pid));
}

Deno.test("a guest spinning forever is killed at its deadline; the call ends timeout", async () => {
  await withProbes(["spin"], async (session) => {
    const call = await session.start("spin", null, { deadline: Date.now() + 1_000 });
    const pid = await spinningPid(session);
    const end = await call.ended;
    assert.equal(end.outcome.status, "timeout");
    await gone(pid);
  });
});

Deno.test("cancelling a spinning guest kills its sandbox; the call ends cancelled", async () => {
  await withProbes(["spin"], async (session) => {
    const call = await session.start("spin", null, { deadline: soon() });
    const pid = await spinningPid(session);
    assert.equal((await call.cancel()).cause, "cancelled");
    await gone(pid);
  });
});

Deno.test("ending the session kills a spinning guest's sandbox and its warm ones", async () => {
  await withProbes(["spin"], async (session) => {
    const call = await session.start("spin", null);
    const pid = await spinningPid(session);
    await session.end();
    assert.equal((await call.ended).cause, "cancelled");
    await gone(pid);
    await within(KILLED_WITHIN_MS, "every sandbox to go", async () => (await runningSandboxes()).length === 0);
  });
});

Deno.test("a guest allocating without bound stops at the memory cap with resource_exhausted", async () => {
  await withProbes(["grow", "count"], async (session) => {
    const end = await session.call("grow", null, { deadline: soon() });
    assert.equal(end.outcome.status === "error" && end.outcome.error.code, "resource_exhausted", JSON.stringify(end));
    // The trapped sandbox was replaced: the next call runs in a fresh one.
    assert.deepEqual((await session.call("count", null, { deadline: soon() })).outcome, { status: "ok", value: 1 });
  }, { components: { memoryMb: 64 } });
});

Deno.test("a guest looping on emit is refused past the budget and killed at its deadline", async () => {
  await withProbes(["emit_spin"], async (session) => {
    const call = await session.start("emit_spin", "x", { deadline: Date.now() + 1_000 });
    const pid = await spinningPid(session);
    const end = await call.ended;
    assert.equal(end.outcome.status, "timeout");
    const events = (await session.read()).filter((record) => record.kind === "tool_event");
    assert.equal(events.length, Math.floor(64 / 8), "only the budget's worth of events is committed");
    await gone(pid);
  }, { maxEmittedBytes: 64 });
});

Deno.test("each call gets a fresh instance in a warm sandbox that is reused", async () => {
  await withProbes(["count", "emit_then_echo"], async (session) => {
    const pid = await warmPid();
    // The next call's instance is made once this call has ended: never this call's own.
    for (let i = 0; i < 6; i++) {
      assert.deepEqual((await session.call("count", null, { deadline: soon() })).outcome, { status: "ok", value: 1 });
      const outcome = { status: "ok", value: `call ${i}` };
      assert.deepEqual((await session.call("emit_then_echo", outcome, { deadline: soon() })).outcome, outcome);
    }
    assert.deepEqual(await runningSandboxes(), [pid]);
  });
});

Deno.test("ending the session kills its idle sandbox, instance made ahead and all, while the Brain stays open", async () => {
  const brain = readerBrain();
  try {
    const session = await brain.sessions.create({ tools: [probeTool("count")({ env: reader })] });
    const pid = await warmPid();
    assert.deepEqual((await session.call("count", null, { deadline: soon() })).outcome, { status: "ok", value: 1 });
    await session.end();
    await gone(pid);
    assert.deepEqual(await runningSandboxes(), []);
  } finally {
    await brain.close();
  }
});

Deno.test("a trap replaces the sandbox", async () => {
  await withProbes(["trap", "count"], async (session) => {
    const pid = await warmPid();
    const trapped = await session.call("trap", null, { deadline: soon() });
    assert.equal(trapped.outcome.status === "error" && trapped.outcome.error.code, "tool_error");
    await gone(pid);
    assert.deepEqual((await session.call("count", null, { deadline: soon() })).outcome, { status: "ok", value: 1 });
  });
});

Deno.test("200 concurrent calls all end ok within the sandbox cap", async () => {
  await withProbes(["count"], async (session) => {
    const ends = await Promise.all(
      Array.from({ length: 200 }, () => session.call("count", null, { deadline: Date.now() + 60_000 })),
    );
    assert.deepEqual(ends.map((end) => end.outcome), ends.map(() => ({ status: "ok", value: 1 })));
    assert.ok((await runningSandboxes()).length <= 3);
  }, { components: { maxSandboxes: 3 } });
});

Deno.test("past the sandbox cap calls wait; past the queue they end resource_exhausted at once", async () => {
  await withProbes(["spin", "count"], async (session) => {
    const spinning = await session.start("spin", null, { deadline: soon() });
    await spinningPid(session);
    const waiting = session.start("count", null, { deadline: soon() });
    const refused = await session.call("count", null, { deadline: soon() });
    assert.equal(refused.outcome.status === "error" && refused.outcome.error.code, "resource_exhausted");
    await spinning.cancel();
    assert.deepEqual((await (await waiting).ended).outcome, { status: "ok", value: 1 });
  }, { components: { maxSandboxes: 1, maxQueuedCalls: 1 } });
});

Deno.test("Component settings are checked when the Brain is made", () => {
  for (const components of [{ memoryMb: 0 }, { maxSandboxes: 1.5 }, { warm: -1 }, { cacheDir: "" }]) {
    assert.throws(() => readerBrain({ components }), { code: "invalid_argument" }, JSON.stringify(components));
  }
});

Deno.test("when the application's process dies mid-call, its spinning sandbox is killed too", async () => {
  const app = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read=.",
      "--allow-write=.tmp",
      "--allow-run",
      new URL("./fixtures/crashing_app.ts", import.meta.url).href,
    ],
    stdout: "piped",
    signal: AbortSignal.timeout(60_000),
  }).spawn();
  const reader = app.stdout.pipeThrough(new TextDecoderStream()).getReader();
  assert.equal((await reader.read()).value?.trim(), "spinning");
  let pids: number[] = [];
  await within(5_000, "the app's guest to spin", async () => (pids = await runningSandboxes(true, app.pid)).length > 0);
  app.kill("SIGKILL");
  await app.status;
  await reader.cancel();
  // Orphaned, the sandbox now belongs to init: look for its pid among all processes.
  const alive = async () => {
    const { stdout } = await new Deno.Command("ps", { args: ["-o", "stat=", "-p", pids.join(",")] }).output();
    return new TextDecoder().decode(stdout).split("\n").filter((stat) => stat.trim() && !stat.trim().startsWith("Z"));
  };
  await within(2_000, "the orphaned sandbox to be killed", async () => (await alive()).length === 0);
});

Deno.test("a warm sandbox killed from outside while idle is replaced: the next call runs in a fresh one", async () => {
  await withProbes(["echo"], async (session) => {
    // After a call its sandbox is ready and idle, kept for the next call.
    assert.deepEqual((await session.call("echo", { status: "ok", value: 0 }, { deadline: soon() })).outcome, {
      status: "ok",
      value: 0,
    });
    const killed = await warmPid();
    Deno.kill(killed, "SIGKILL");
    await within(5_000, "a fresh warm sandbox", async () => {
      const pids = await runningSandboxes();
      return pids.length === 1 && pids[0] !== killed;
    });
    const end = await session.call("echo", { status: "ok", value: 1 }, { deadline: soon() });
    assert.deepEqual(end.outcome, { status: "ok", value: 1 });
  });
});

Deno.test("a process out of file descriptors as a trapped sandbox is replaced: a call meanwhile ends resource_exhausted at once, and calls run again once it has descriptors", async () => {
  // The app may hold 256 descriptors, and takes every one left before the trap.
  const app = new Deno.Command("sh", {
    args: [
      "-c",
      'ulimit -n 256; exec "$0" "$@"',
      Deno.execPath(),
      "run",
      "--quiet",
      "--allow-read=.",
      "--allow-write=.tmp",
      "--allow-run",
      new URL("./fixtures/fd_starved_app.ts", import.meta.url).href,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  });
  const { code, stdout, stderr } = await app.output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  const [before, trapped, starved, after] = new TextDecoder().decode(stdout).trim().split("\n").map((line) =>
    JSON.parse(line)
  );
  assert.deepEqual(before, { status: "ok", value: 0 });
  assert.equal(trapped.error?.code, "tool_error");
  assert.equal(starved.error?.code, "resource_exhausted", JSON.stringify(starved));
  assert.deepEqual(after, { status: "ok", value: 3 });
});
