import assert from "node:assert/strict";
import { Brain } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { tick } from "./fixtures/ticks.ts";
import { ORPHANED_MESSAGE } from "../../src/embedded/recover.ts";
import { lines } from "../_support/lines.ts";
import { scratchDir } from "../_support/scratch.ts";
import { spawnDeno } from "../_support/spawn_deno.ts";

const dir = scratchDir("crash_test");
const ROUNDS = 20;
/** Acknowledgements to wait for before the kill, drawn anew each round. */
const MAX_ACKS_BEFORE_KILL = 150;

interface Ack {
  sequence: number;
  call: number;
  n: number;
}

/** Runs the emitter child until it has acknowledged `killAfter` emits, SIGKILLs it, and returns every ack it printed. */
async function runAndKill(path: string, killAfter: number): Promise<Ack[]> {
  // A child that outlives spawnDeno's deadline is killed by it and fails the test below.
  await using child = spawnDeno(
    ["run", "--allow-read=.", "--allow-write=.tmp", "tests/e2e/fixtures/emitter.ts", path],
    { stdout: "piped", stderr: "piped" },
  );
  const stderr = new Response(child.stderr).text();
  const acks: Ack[] = [];
  let killed = false;
  for await (const line of lines(child.stdout)) {
    if (line.startsWith("pid ")) {
      assert.equal(Number(line.slice(4)), child.pid, "the spawned deno is the emitting process");
      continue;
    }
    const [word, sequence, call, n] = line.split(" ");
    assert.equal(word, "ack", line);
    acks.push({ sequence: Number(sequence), call: Number(call), n: Number(n) });
    if (acks.length === killAfter && !killed) {
      child.kill("SIGKILL");
      killed = true;
    }
  }
  const status = await child.status;
  assert.ok(killed, `the child ended after ${acks.length} acks without being killed: ${await stderr}`);
  assert.equal(status.signal, "SIGKILL");
  await stderr;
  return acks;
}

function check(records: JournalRecord[], acks: Ack[]): void {
  assert.deepEqual(records.map((record) => record.sequence), records.map((_, index) => index + 1), "dense");
  const bySequence = new Map(records.map((record) => [record.sequence, record]));
  for (const ack of acks) {
    const record = bySequence.get(ack.sequence);
    assert.ok(record?.kind === "tool_event", `acknowledged record ${ack.sequence} is there`);
    assert.deepEqual([record.call, record.data], [ack.call, tick(ack.n)]);
  }
  const calls = records.filter((record) => record.kind === "tool_call_started").map((record) => record.sequence);
  assert.equal(calls.length, 2);
  for (const call of calls) {
    const ticks = records.flatMap((record) =>
      record.kind === "tool_event" && record.call === call ? [record.data] : []
    );
    assert.deepEqual(ticks, ticks.map((_, n) => tick(n)), `call ${call} ticks once each, in order, whole`);
  }
  const tail = records.slice(-2);
  assert.deepEqual(
    tail.map((record) => record.kind === "tool_call_finished" && [record.call, record.cause, record.outcome]),
    calls.map((call) => [call, "unknown", { status: "unknown", message: ORPHANED_MESSAGE }]),
    "both calls end unknown after the restart, and nothing follows",
  );
}

Deno.test(`crash: SIGKILL mid-stream ${ROUNDS} times loses no acknowledged record and replays nothing`, async () => {
  for (let round = 0; round < ROUNDS; round++) {
    const path = `${dir}/round-${round}.kv`;
    const killAfter = 1 + Math.floor(Math.random() * MAX_ACKS_BEFORE_KILL);
    const acks = await runAndKill(path, killAfter);
    assert.ok(acks.length >= killAfter);
    const brain = await Brain.open({ path });
    try {
      // The killed child's lease (300 ms) must end before its calls are ended.
      const records = await (await brain.sessions.get("crash", { waitMs: 5_000 })).read();
      check(records, acks);
    } finally {
      await brain.close();
    }
    await using again = await Brain.open({ path });
    const records = await (await again.sessions.get("crash")).read();
    check(records, acks);
  }
});
