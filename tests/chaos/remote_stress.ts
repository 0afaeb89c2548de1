/**
 * Many concurrent calls of one remote session (an in-process server, a client
 * through a fault proxy) that finish, fail, time out and are cancelled in a
 * seeded random mix, with the link cut, torn or blackholed while they run. Checks that every caller
 * settles by its deadline + 2 s, no call is dispatched twice, every dispatched
 * run is stopped, the client serves calls again, and the server's journal keeps
 * its invariants with nothing left open.
 */
import { z } from "zod";
import { Brain, fail, tool } from "../../mod.ts";
import { createBrainServer } from "../../src/host/server/server.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { faultProxy } from "../host/fault_proxy.ts";
import { until } from "../_support/until.ts";
import { journalViolations, tallyCall } from "./invariants.ts";
import { random } from "./random.ts";
import type { CampaignReport } from "./remote_campaign.ts";

const ENDS = ["finish", "fail", "throw", "hang"] as const;
const FAULTS = ["cut", "tear", "blackhole"] as const;

/** Runs `calls` concurrent calls with one link fault among them; returns what it saw. */
export async function remoteStress({ seed, calls }: { seed: number; calls: number }): Promise<CampaignReport> {
  const rand = random(seed);
  const violations: string[] = [];
  const outcomes: Record<string, number> = {};
  const faults: Record<string, number> = {};
  const dispatched = new Map<number, number>();
  let running = 0;
  /** Resolves once no run is going, when waited for. */
  let idle: PromiseWithResolvers<void> | undefined;
  const work = tool({
    name: "work",
    description: "Counts its dispatch, emits, then finishes, fails, throws or waits for its end.",
    input: z.object({ emits: z.number(), end: z.enum(ENDS) }),
    run: async ({ emits, end }, ctx) => {
      dispatched.set(ctx.sequence, (dispatched.get(ctx.sequence) ?? 0) + 1);
      running++;
      try {
        for (let n = 0; n < emits; n++) await ctx.emit("tick", n);
        if (end === "hang") await ended(ctx.signal);
        if (end === "throw") throw new Error("thrown on purpose");
        if (end === "fail") return await ctx.finish(fail("nope", "failed on purpose"));
        return await ctx.finish(emits);
      } finally {
        if (--running === 0) idle?.resolve();
      }
    },
  });
  const server = await createBrainServer({ serverToken: "stress-operator", pingIntervalMs: 200 });
  const stop = new AbortController();
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {}, signal: stop.signal }, server.fetch);
  const proxy = faultProxy(`http://127.0.0.1:${http.addr.port}`);
  const brain = new Brain({
    url: proxy.url,
    serverToken: "stress-operator",
    token: "stress-token",
    host: "stress",
    pingIntervalMs: 200,
    deadlineGraceMs: 500,
    maxReconnectDelayMs: 100,
  });
  let sessionId = "";
  try {
    const session = await brain.sessions.create({ tools: [work()] });
    sessionId = session.id;
    const one = async (n: number) => {
      const end = ENDS[Math.floor(rand() * ENDS.length)];
      const cancelAfter = rand() < 0.3 ? Math.floor(rand() * 300) : undefined;
      const deadline = Date.now() + 50 + Math.floor(rand() * 1_000);
      const input = { emits: Math.floor(rand() * 3), end };
      const ended = async () => {
        if (cancelAfter === undefined) return await session.call("work", input, { deadline });
        if (n % 2 === 0) {
          return await session.call("work", input, { deadline, signal: AbortSignal.timeout(cancelAfter) });
        }
        // Cancelled by its handle, whose end and cancel must agree.
        const call = await session.start("work", input, { deadline });
        await new Promise((resolve) => setTimeout(resolve, cancelAfter));
        const [cancelled, ended] = await Promise.all([call.cancel(), call.ended]);
        if (cancelled.sequence !== ended.sequence) {
          violations.push(`call ${call.sequence}: cancel told ${cancelled.sequence}, its end ${ended.sequence}`);
        }
        return ended;
      };
      await tallyCall(n, deadline, ended, outcomes, violations);
    };
    // Calls start in waves over the cut, so some start while the link is down and the client reconnects.
    const all = Promise.all(Array.from({ length: calls }, async (_, n) => {
      const wave = Math.floor(rand() * 4);
      if (wave > 0) await new Promise((resolve) => setTimeout(resolve, wave * 100));
      await one(n);
    }));
    await new Promise((resolve) => setTimeout(resolve, 50 + rand() * 200));
    const fault = FAULTS[Math.floor(rand() * FAULTS.length)];
    if (fault === "blackhole") {
      // Silent for longer than the ping interval, so the client notices.
      proxy.blackhole();
      await new Promise((resolve) => setTimeout(resolve, 500));
      proxy.heal();
    } else proxy[fault]();
    faults[fault] = 1;
    await all;
    // The client serves calls again.
    const again = Date.now() + 10_000;
    let served = false;
    while (!served && Date.now() < again) {
      const end = await session.call("work", { emits: 0, end: "finish" }, { timeoutMs: 1_000 }).catch(() => undefined);
      served = end?.outcome.status === "ok";
    }
    if (!served) violations.push(`the client did not serve calls again within 10 s of the ${Object.keys(faults)}`);
    // Every run the client started is stopped: its call ended (by the server's deadline at the latest).
    if (running > 0) {
      idle = Promise.withResolvers();
      const timer = setTimeout(() => idle!.reject(new Error("timeout")), 5_000);
      await idle.promise.catch(() => violations.push(`${running} runs still going 5 s after every caller settled`));
      clearTimeout(timer);
    }
    const twice = [...dispatched].filter(([, count]) => count > 1);
    if (twice.length > 0) violations.push(`calls dispatched more than once: ${JSON.stringify(twice)}`);
    // Calls whose caller gave up on the cut link end by their deadline on the server: follow until those open have.
    const key = hostSessionKey("stress", sessionId);
    const open = new Set((await server.journal.openCalls(key)).map((record) => record.sequence));
    if (open.size > 0) {
      const source = { records: (options: { signal: AbortSignal }) => server.journal.subscribe(key, options) };
      await until(source, (seen) => {
        const last = seen.at(-1);
        if (last?.kind === "tool_call_finished") open.delete(last.call);
        return open.size === 0;
      }, { what: "every open call of the session to end", timeoutMs: 5_000 })
        .catch((error) => violations.push(String(error)));
    }
    violations.push(...journalViolations(await server.journal.read(key)));
    const left = await server.journal.openCalls(key);
    if (left.length > 0) violations.push(`the journal's open-call index still lists ${left.map((r) => r.sequence)}`);
  } finally {
    await brain.close();
    await proxy.close();
    await server.close();
    stop.abort();
    await http.finished;
  }
  return { calls, faults, outcomes, violations };
}

/** Resolves once `signal` has aborted (at once if it has). */
function ended(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}
