import assert from "node:assert/strict";
import { Brain } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { PostgresJournal } from "../../src/journal/postgres.ts";
import type { Journal } from "../../src/journal/journal.ts";
import { startPostgres } from "../_support/postgres.ts";
import { scratchDir } from "../_support/scratch.ts";
import { spawnDeno } from "../_support/spawn_deno.ts";
import { journalOptions, ownerTools } from "./fixtures/owner.ts";
import { lines } from "../_support/lines.ts";

const dir = scratchDir("owners_test");
const PERMISSIONS = ["--allow-read=.", "--allow-write=.tmp", "--allow-net=127.0.0.1", "--allow-env"];

function owner(args: string[]): { process: Deno.ChildProcess; lines: AsyncGenerator<string> } {
  const process = spawnDeno(["run", "--quiet", ...PERMISSIONS, "tests/e2e/fixtures/owner.ts", ...args], {
    stdout: "piped",
    stderr: "inherit",
    signal: AbortSignal.timeout(120_000),
  });
  return { process, lines: lines(process.stdout) };
}

async function createSession(journal: string, id: string): Promise<void> {
  await using brain = await Brain.open(journalOptions(journal));
  await brain.sessions.create({ id, tools: ownerTools() });
}

/** Every call has exactly one terminal record and nothing of it follows that record. */
function checkCalls(records: JournalRecord[]): number {
  const ended = new Map<number, number>();
  for (const record of records) {
    if (!("call" in record) || record.kind === "tool_message" || record.kind === "observation_message") continue;
    const call = record.call as number;
    if (record.kind === "tool_call_finished") {
      assert.ok(!ended.has(call), `call ${call} has one terminal record`);
      ended.set(call, record.sequence);
    } else if (ended.has(call) && record.kind !== "tool_call_late") {
      assert.fail(`record ${record.sequence} (${record.kind}) of call ${call} follows its terminal record`);
    }
  }
  const started = records.filter((record) => record.kind === "tool_call_started");
  for (const call of started) assert.ok(ended.has(call.sequence), `call ${call.sequence} ended`);
  return started.length;
}

async function twoWriters(journal: string, open: () => Promise<Journal>): Promise<void> {
  await createSession(journal, "shared");
  const rounds = 5;
  const perRound = 30;
  const children = [
    owner(["calls", journal, "shared", `${rounds}`, `${perRound}`]),
    owner([
      "calls",
      journal,
      "shared",
      `${rounds}`,
      `${perRound}`,
    ]),
  ];
  const reader = await open();
  try {
    // A third party reads and follows the session while both write, without disturbing either.
    let followed = 0;
    const controller = new AbortController();
    const following = (async () => {
      for await (const _record of reader.subscribe("shared", { signal: controller.signal })) followed++;
    })();
    const outputs = await Promise.all(children.map(async (child) => {
      const said: string[] = [];
      for await (const line of child.lines) said.push(line);
      assert.equal((await child.process.status).code, 0, said.slice(-3).join("\n"));
      return said;
    }));
    for (const said of outputs) {
      assert.equal(said.at(-1), "done");
      assert.equal(said.filter((line) => line.startsWith("call ")).length, rounds * perRound);
    }
    const records = await reader.read("shared");
    assert.deepEqual(records.map((record) => record.sequence), records.map((_, index) => index + 1));
    assert.equal(checkCalls(records), 2 * rounds * perRound);
    controller.abort();
    await following;
    assert.ok(followed > 0);
  } finally {
    await reader.close();
  }
}

Deno.test("two processes on one KV file take turns owning a session: one terminal per call, nothing after it", async () => {
  const path = `${dir}/shared.kv`;
  await twoWriters(path, () => KvJournal.open(path));
});

Deno.test("two processes on one PostgreSQL take turns owning a session: one terminal per call, nothing after it", async () => {
  await using pg = await startPostgres();
  await twoWriters(pg.url, () => PostgresJournal.open(pg.url));
});

async function stopContinue(journal: string): Promise<void> {
  const leaseMs = 500;
  await createSession(journal, "held");
  const child = owner(["hold", journal, "held", `${leaseMs}`]);
  const said: string[] = [];
  const next = async () => {
    const { value, done } = await child.lines.next();
    assert.ok(!done, `the child ended early: ${said.join("\n")}`);
    said.push(value);
    return value;
  };
  try {
    const call = Number((await next()).split(" ")[1]);
    while (!(await next()).startsWith("ack ")) { /* until the call has emitted */ }
    child.process.kill("SIGSTOP");
    // Past the stopped owner's lease, this process takes the session over and ends its call.
    const brain = await Brain.open({ ...journalOptions(journal), leaseMs: 10_000 });
    try {
      const session = await brain.sessions.get("held", { tools: ownerTools(), waitMs: 10_000 });
      const taken = await session.read();
      const end = taken.find((record) => record.kind === "tool_call_finished" && record.call === call);
      assert.ok(end?.kind === "tool_call_finished" && end.cause === "unknown");
      const head = taken.at(-1)!.sequence;
      child.process.kill("SIGCONT");
      let line: string;
      do line = await next(); while (!line.startsWith("ended "));
      assert.equal(line, "ended fenced", "the woken owner's call settles fenced");
      // The emit is refused fenced, or call_finished when the fenced renewal had already ended the call here.
      const emit = said.find((text) => text.startsWith("emit "));
      assert.ok(emit === undefined || ["emit fenced", "emit call_finished"].includes(emit), said.join("\n"));
      // Nothing the stale owner tried after the takeover is in the journal.
      const sentinel = await session.call("step", { n: 1 });
      const records = await session.read({ from: head + 1 });
      assert.deepEqual(
        records.map((record) => record.kind),
        ["tool_call_started", "tool_event", "tool_event", "tool_result", "tool_call_finished"],
      );
      assert.equal(records[0].sequence, sentinel.call);
      checkCalls(await session.read());
    } finally {
      await brain.close();
    }
    assert.equal((await child.process.status).code, 0);
  } finally {
    try {
      child.process.kill("SIGKILL");
    } catch {
      // Already exited.
    }
    await child.process.status;
    for await (const _line of child.lines) { /* drain */ }
  }
}

Deno.test("SIGSTOP the owner past its lease, take over, SIGCONT: its writes are refused fenced (KV file)", async () => {
  const path = `${dir}/held.kv`;
  await stopContinue(path);
});

Deno.test("SIGSTOP the owner past its lease, take over, SIGCONT: its writes are refused fenced (PostgreSQL)", async () => {
  await using pg = await startPostgres();
  await stopContinue(pg.url);
});
