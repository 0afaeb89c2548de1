/**
 * Many interleaved sessions of one journal, each with calls that finish, fail,
 * throw, time out and are cancelled in a seeded random mix on small timers,
 * some finishing from their signal's abort listener, and some sessions ended
 * while their calls run. Checks each session's records (the journal
 * invariants), that each caller is told the end its journal has, that no call
 * is dispatched twice, that the open-call index and each handle's open calls
 * end empty, and that every subscriber sees every committed record exactly
 * once, in order.
 */
import { z } from "zod";
import { Brain, BrainError, type BrainSession, fail, tool } from "../../mod.ts";
import type { Journal } from "../../src/journal/journal.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { MemoryJournal } from "../../src/journal/memory.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { until } from "../_support/until.ts";
import { journalViolations } from "./invariants.ts";
import { random } from "./random.ts";
import type { CampaignReport } from "./remote_campaign.ts";

const ENDS = ["finish", "fail", "result-fail", "throw", "return", "hang", "listener"] as const;
const MODES = ["call", "deadline", "cancel", "signal"] as const;

/** What one run does. */
export interface SessionStressOptions {
  seed: number;
  sessions: number;
  /** Calls per session. */
  calls: number;
  /** A memory journal (commits at once), or a Deno KV one in memory (commits through its promise). */
  journal: "memory" | "kv";
}

/** Runs the sessions' calls; returns what it saw. */
export async function sessionStress(options: SessionStressOptions): Promise<CampaignReport> {
  const { seed, sessions, calls } = options;
  const rand = random(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)];
  const violations: string[] = [];
  const outcomes: Record<string, number> = {};
  const dispatched = new Map<string, number>();
  const pause = (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
    });
  const ignoreEnded = (error: unknown) => {
    if (!(error instanceof BrainError && error.code === "call_finished")) violations.push(`a report failed: ${error}`);
  };
  const scripted = tool({
    name: "scripted",
    description: "Emits, waits, then ends as its input says.",
    input: z.object({ emits: z.number(), ms: z.number(), end: z.enum(ENDS) }),
    run: async ({ emits, ms, end }, ctx) => {
      const key = `${ctx.sessionId}:${ctx.sequence}`;
      dispatched.set(key, (dispatched.get(key) ?? 0) + 1);
      for (let n = 0; n < emits; n++) {
        await ctx.emit("tick", n).catch(ignoreEnded);
        if (n % 2 === 1) await pause(0);
      }
      if (end === "return") {
        void pause(ms, ctx.signal).then(() => ctx.finish("later")).catch(ignoreEnded);
        return "returned";
      }
      if (end === "listener") {
        // Finishes as the call ends, from the abort listener: recorded late, after the terminal record.
        ctx.signal.addEventListener("abort", () => void ctx.finish("from the listener").catch(ignoreEnded));
        return;
      }
      await pause(ms, end === "hang" ? undefined : ctx.signal);
      if (end === "hang") {
        await ended(ctx.signal);
        return ctx.finish("too late");
      }
      if (end === "throw") throw new Error("thrown on purpose");
      if (end === "fail") return ctx.finish(fail("nope", "failed on purpose"));
      if (end === "result-fail") {
        await ctx.emitResult(fail("nope", "a failed result ends the call")).catch(ignoreEnded);
        return;
      }
      return ctx.finish(emits);
    },
  });
  const journal: Journal = options.journal === "memory" ? new MemoryJournal() : await KvJournal.open(":memory:");
  const brain = new Brain({ journal });
  const told: { session: string; call: number; sequence: number; cause: string }[] = [];
  const followers: { session: BrainSession; from: number; seen: JournalRecord[]; done: Promise<unknown> }[] = [];
  const stop = new AbortController();
  const follow = (session: BrainSession, from: number) => {
    const seen: JournalRecord[] = [];
    const done = (async () => {
      for await (const record of session.records({ from, signal: stop.signal })) seen.push(record);
    })().catch((error) => violations.push(`a subscriber of ${session.id} failed: ${error}`));
    followers.push({ session, from, seen, done });
  };
  const one = async (session: BrainSession) => {
    const end = pick(ENDS);
    const mode = end === "hang" || end === "listener" ? pick(MODES.slice(1)) : pick(MODES);
    const input = { emits: Math.floor(rand() * 4), ms: Math.floor(rand() * 8), end };
    const after = Math.floor(rand() * 8);
    try {
      let result;
      if (mode === "call") result = await session.call("scripted", input);
      else if (mode === "deadline") result = await session.call("scripted", input, { timeoutMs: 1 + after });
      else if (mode === "signal") {
        result = await session.call("scripted", input, { signal: AbortSignal.timeout(after) });
      } else {
        const started = await session.start("scripted", input);
        await pause(after);
        const [cancelled, ended] = await Promise.all([started.cancel(), started.ended]);
        if (cancelled.sequence !== ended.sequence) {
          violations.push(`call ${started.sequence}: cancel told ${cancelled.sequence}, its end ${ended.sequence}`);
        }
        result = ended;
      }
      outcomes[result.cause] = (outcomes[result.cause] ?? 0) + 1;
      told.push({ session: session.id, ...result });
    } catch (error) {
      // Only a session that ended refuses new calls.
      if (!(error instanceof BrainError && error.code === "session_closed")) {
        violations.push(`a ${mode} call (${end}) of ${session.id} threw ${error}`);
      } else outcomes.refused = (outcomes.refused ?? 0) + 1;
    }
  };
  try {
    const handles: BrainSession[] = [];
    for (let index = 0; index < sessions; index++) handles.push(await brain.sessions.create({ tools: [scripted()] }));
    for (const session of handles) follow(session, 1);
    // A quarter of the sessions end while their calls run.
    const ending = new Set(handles.filter(() => rand() < 0.25));
    await Promise.all(handles.map(async (session) => {
      const running: Promise<void>[] = [];
      const endAt = ending.has(session) ? Math.floor(rand() * calls) : -1;
      for (let n = 0; n < calls; n++) {
        running.push(one(session));
        if (n === Math.floor(calls / 2)) follow(session, Math.max(1, (await session.read()).length - 2));
        if (n === endAt) running.push(session.end());
        if (rand() < 0.3) await pause(Math.floor(rand() * 3));
      }
      await Promise.all(running);
    }));
    // Every subscriber reads up to its session's last record.
    for (const { session, seen } of followers) {
      const head = (await session.read()).length;
      const source = { records: (o: { signal: AbortSignal }) => journal.subscribe(session.id, { ...o, from: head }) };
      if ((seen.at(-1)?.sequence ?? 0) < head) {
        await until(source, () => (seen.at(-1)?.sequence ?? 0) >= head, `a subscriber of ${session.id} to catch up`)
          .catch((error) => violations.push(String(error)));
      }
    }
    stop.abort();
    await Promise.all(followers.map(({ done }) => done));
    for (const session of handles) {
      const records = await session.read();
      for (const violation of journalViolations(records)) violations.push(`${session.id}: ${violation}`);
      const open = await journal.openCalls(session.id);
      if (open.length > 0) violations.push(`${session.id}: the open-call index lists ${open.map((r) => r.sequence)}`);
      const bySequence = new Map(records.map((record) => [record.sequence, record]));
      for (const end of told.filter((end) => end.session === session.id)) {
        const record = bySequence.get(end.sequence);
        if (record?.kind !== "tool_call_finished" || record.call !== end.call || record.cause !== end.cause) {
          violations.push(`${session.id}: call ${end.call} was told ${end.cause} at ${end.sequence}: ${record?.kind}`);
        }
      }
      for (const { from, seen } of followers.filter((follower) => follower.session === session)) {
        const expected = records.filter((record) => record.sequence >= from).map((record) => record.sequence);
        const got = seen.map((record) => record.sequence);
        if (got.join() !== expected.join()) {
          violations.push(`${session.id}: a subscriber from ${from} saw ${got.join()} of ${expected.join()}`);
        }
      }
    }
    for (const [key, count] of dispatched) if (count > 1) violations.push(`call ${key} was dispatched ${count} times`);
    // The handles hold no open call either: ending one that still runs commits nothing.
    for (const session of handles) {
      const head = (await session.read()).length;
      await session.end();
      const after = await session.read({ from: head + 1 });
      if (after.length > 0) violations.push(`${session.id}: its end still ended ${after.map((r) => r.kind)}`);
    }
  } finally {
    stop.abort();
    await brain.close();
  }
  return { calls: told.length, faults: {}, outcomes, violations };
}

/** Resolves once `signal` has aborted (at once if it has). */
function ended(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}
