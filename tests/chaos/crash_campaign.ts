/**
 * A crash campaign against an embedded Brain: worker processes
 * (`fixtures/worker.ts`) run calls on one session of a KV file or a
 * PostgreSQL database and are SIGKILLed at random points (mid-emit, mid-chunk,
 * mid-terminal commit), sometimes after a SIGSTOP, sometimes while a second
 * worker waits to take the session over, sometimes paused past its lease while
 * a successor takes over and then woken to commit what it had in flight. After each round the journal must keep
 * every acknowledged record, agree with every end a caller was told, hold exactly
 * one terminal per call once a new owner swept, and (KV) keep no orphan chunks.
 */
import { Brain } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { lines } from "../_support/lines.ts";
import { spawnDeno } from "../_support/spawn_deno.ts";
import { journalViolations } from "./invariants.ts";
import { random } from "./random.ts";
import { payload } from "./fixtures/payload.ts";
import type { CampaignReport } from "./remote_campaign.ts";

export interface CrashCampaignOptions {
  seed: number;
  rounds: number;
  /** A KV file path, or a postgres:// URL. */
  journal: string;
  log?: (line: string) => void;
}

interface Worker {
  process: Deno.ChildProcess;
  output: AsyncGenerator<string>;
  acks: { sequence: number; call: number; n: number; bytes: number }[];
  ends: { call: number; sequence: number; cause: string }[];
  said: number;
  reading: Promise<void>;
  ready: Promise<void>;
  stderr?: string;
}

function startWorker(journal: string, session: string, seed: number): Worker {
  const process = spawnDeno(
    [
      "run",
      "--quiet",
      "--allow-read=.",
      "--allow-write=.tmp",
      "--allow-net=127.0.0.1",
      "--allow-env",
      "tests/chaos/fixtures/worker.ts",
      journal,
      session,
      "4",
      String(seed),
    ],
    { stdout: "piped", stderr: "piped", signal: AbortSignal.timeout(120_000) },
  );
  const ready = Promise.withResolvers<void>();
  const worker: Worker = {
    process,
    output: lines(process.stdout),
    acks: [],
    ends: [],
    said: 0,
    reading: Promise.resolve(),
    ready: ready.promise,
  };
  worker.reading = (async () => {
    for await (const line of worker.output) {
      worker.said++;
      const [word, ...rest] = line.split(" ");
      const numbers = rest.map(Number);
      if (word === "ready") ready.resolve();
      if (word === "ack") {
        const [sequence, call, n, bytes] = numbers;
        worker.acks.push({ sequence, call, n, bytes });
      }
      if (word === "end") worker.ends.push({ call: numbers[0], sequence: numbers[1], cause: rest[2] });
    }
    ready.reject(new Error("the worker ended before it was ready"));
  })();
  worker.ready.catch(() => {});
  void new Response(process.stderr).text().then((text) => text && (worker.stderr = text));
  return worker;
}

async function kill(worker: Worker, signal: Deno.Signal = "SIGKILL"): Promise<void> {
  try {
    worker.process.kill(signal);
  } catch {
    // Already gone.
  }
  if (signal === "SIGKILL") {
    await worker.process.status;
    await worker.reading;
  }
}

/** Runs the campaign and returns what it saw. */
export async function crashCampaign(
  { seed, rounds, journal, log = () => {} }: CrashCampaignOptions,
): Promise<CampaignReport> {
  const rand = random(seed);
  const violations: string[] = [];
  const faults: Record<string, number> = {};
  const outcomes: Record<string, number> = {};
  const session = `crash-${seed}`;
  const options = journal.startsWith("postgres") ? { url: journal } : { path: journal };
  const workers: Worker[] = [];
  let calls = 0;
  for (let round = 0; round < rounds; round++) {
    const worker = startWorker(journal, session, seed * 1000 + round);
    workers.push(worker);
    try {
      await worker.ready;
    } catch {
      await worker.process.status;
      violations.push(`round ${round}: the worker did not start: ${worker.stderr}`);
      continue;
    }
    // Kill after a random number of lines, so kills land anywhere in the calls' lives.
    const lines = 1 + Math.floor(rand() * 60);
    const until = Date.now() + 10_000;
    while (worker.said < lines && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 1));
    const kind = rand();
    let fault: string;
    if (kind < 0.15) {
      // The owner pauses (a long GC, a suspended VM) past its lease while a successor waits for the session, then
      // wakes with calls in flight and tries to commit them (fenced if the successor took over). On a KV file a pause that holds SQLite's lock keeps the
      // successor waiting until the wake; on PostgreSQL the paused transaction is ended and the successor takes over.
      fault = "stale-owner-wakes";
      await kill(worker, "SIGSTOP");
      const next = startWorker(journal, session, seed * 1000 + round + 500);
      workers.push(next);
      await Promise.race([next.ready.catch(() => {}), new Promise((resolve) => setTimeout(resolve, 1_000))]);
      await kill(worker, "SIGCONT");
      // The woken owner may renew before the successor acquires (nothing took the session over): it keeps the session.
      const taken = await Promise.race([
        next.ready.then(() => true, () => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 3_000)),
      ]);
      if (taken) {
        const more = next.said + 1 + Math.floor(rand() * 30);
        const stop = Date.now() + 10_000;
        while (next.said < more && Date.now() < stop) await new Promise((resolve) => setTimeout(resolve, 1));
      } else fault = "stale-owner-wakes-and-keeps";
      await kill(worker);
      await kill(next);
    } else if (kind < 0.3) {
      fault = "stop-kill";
      await kill(worker, "SIGSTOP");
      await new Promise((resolve) => setTimeout(resolve, rand() * 500));
      await kill(worker);
    } else if (kind < 0.5) {
      // A second worker waits for the session while the first still runs, and takes it over after the kill.
      fault = "kill-with-successor";
      const next = startWorker(journal, session, seed * 1000 + round + 500);
      await new Promise((resolve) => setTimeout(resolve, rand() * 400));
      await kill(worker);
      try {
        await next.ready;
        const more = next.said + 1 + Math.floor(rand() * 30);
        const stop = Date.now() + 10_000;
        while (next.said < more && Date.now() < stop) await new Promise((resolve) => setTimeout(resolve, 1));
      } catch {
        violations.push(`round ${round}: the successor did not take the session: ${next.stderr}`);
      }
      await kill(next);
      workers.push(next);
    } else {
      fault = "kill";
      await kill(worker);
    }
    faults[fault] = (faults[fault] ?? 0) + 1;
    log(`round ${round}: ${fault} after ${worker.said} lines`);
  }
  // A last owner ends what the killed ones left open, then everything is checked.
  const brain = await Brain.open({ ...options, leaseMs: 300 });
  let records: JournalRecord[] = [];
  try {
    const handle = await brain.sessions.get(session, { waitMs: 10_000 });
    records = await handle.read();
  } finally {
    await brain.close();
  }
  violations.push(...journalViolations(records));
  const bySequence = new Map(records.map((record) => [record.sequence, record]));
  for (const worker of workers) {
    for (const ack of worker.acks) {
      const record = bySequence.get(ack.sequence);
      if (
        record?.kind !== "tool_event" || record.call !== ack.call || record.data !== payload(ack.call, ack.n, ack.bytes)
      ) {
        violations.push(`acknowledged emit ${ack.sequence} of call ${ack.call} is lost or changed: ${record?.kind}`);
      }
    }
    for (const end of worker.ends) {
      calls++;
      outcomes[end.cause] = (outcomes[end.cause] ?? 0) + 1;
      const record = bySequence.get(end.sequence);
      if (record?.kind !== "tool_call_finished" || record.call !== end.call || record.cause !== end.cause) {
        violations.push(
          `call ${end.call} was told ${end.cause} at ${end.sequence}; the journal has ${JSON.stringify(record)}`,
        );
      }
    }
  }
  if (!journal.startsWith("postgres")) violations.push(...await kvLeftovers(journal));
  return { calls, faults, outcomes, violations };
}

/** Chunks no committed record refers to, and pending markers, left in a KV file. */
async function kvLeftovers(path: string): Promise<string[]> {
  const kv = await Deno.openKv(path);
  try {
    const referenced = new Set<string>();
    for await (const entry of kv.list<unknown>({ prefix: ["record"] })) {
      const value = entry.value as { chunks?: string };
      if (value && typeof value === "object" && "chunks" in value) referenced.add(value.chunks!);
    }
    const orphans = new Set<string>();
    for await (const entry of kv.list({ prefix: ["chunk"] })) {
      const blob = entry.key[2] as string;
      if (!referenced.has(blob)) orphans.add(blob);
    }
    const pending = [];
    for await (const entry of kv.list({ prefix: ["pending"] })) pending.push(entry.key[2]);
    return [
      ...(orphans.size > 0 ? [`${orphans.size} chunk blobs no record refers to are left`] : []),
      ...(pending.length > 0 ? [`${pending.length} pending chunk markers are left`] : []),
    ];
  } finally {
    kv.close();
  }
}
