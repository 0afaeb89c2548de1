/**
 * A fault campaign against a remote Brain: a real server process (`serve.ts`
 * over a Deno KV file or PostgreSQL) on a fixed port, a client in this process
 * reaching it through a fault proxy, and random faults while calls run: link
 * cuts, torn frames, delays, blackholes, server SIGKILL + restart (crash loops)
 * and SIGSTOP/SIGCONT. Checks every call's settling time against its deadline,
 * dispatches per call, that the client serves calls again after every fault, and
 * the journal's invariants at the end.
 */
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import type { Journal } from "../../src/journal/journal.ts";
import { faultProxy } from "../host/fault_proxy.ts";
import { SERVER_TOKEN, type ServerProcess, serverProcess } from "../_support/server_process.ts";
import { checkJournal, tallyCall } from "./invariants.ts";
import { random } from "./random.ts";
import { hostSessionKey } from "../../src/util/names.ts";

/** What one campaign does. */
export interface RemoteCampaignOptions {
  seed: number;
  /** Faults to inject. */
  faults: number;
  /** A KV file path, or a postgres:// URL. */
  journal: string;
  /** Opens the journal for the final check. */
  open?: () => Promise<Journal>;
  /** Fault kinds to draw from; all by default. */
  kinds?: readonly FaultKind[];
  log?: (line: string) => void;
}

export const FAULT_KINDS = ["cut", "tear", "delay", "blackhole", "kill", "stop", "crashloop"] as const;
export type FaultKind = typeof FAULT_KINDS[number];

/** What a campaign saw. */
export interface CampaignReport {
  calls: number;
  faults: Record<string, number>;
  outcomes: Record<string, number>;
  violations: string[];
}

const LEASE_MS = 1_000;

export async function remoteCampaign(options: RemoteCampaignOptions): Promise<CampaignReport> {
  const { seed, faults, journal, kinds = FAULT_KINDS, log = () => {} } = options;
  const rand = random(seed);
  const violations: string[] = [];
  const port = freePort();
  const args = [
    "--port",
    String(port),
    ...(journal.startsWith("postgres") ? ["--journal", journal] : ["--path", journal]),
    "--lease-ms",
    String(LEASE_MS),
  ];
  const start = () => serverProcess(args);
  let server: ServerProcess | undefined = await start();
  const proxy = faultProxy(`http://127.0.0.1:${port}`);
  const dispatched = new Map<number, number>();
  const counted = tool({
    name: "counted",
    description: "Counts its dispatch, sometimes emits, sometimes takes a while, finishes with its input.",
    input: z.object({ n: z.number(), ms: z.number() }),
    run: async ({ n, ms }, ctx) => {
      dispatched.set(ctx.sequence, (dispatched.get(ctx.sequence) ?? 0) + 1);
      if (n % 3 === 0) await ctx.emit("seen", n);
      if (ms > 0) {
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, ms);
          ctx.signal.addEventListener("abort", () => (clearTimeout(timer), resolve(undefined)), { once: true });
        });
      }
      return ctx.finish(n);
    },
  });
  const brain = new Brain({
    url: proxy.url,
    serverToken: SERVER_TOKEN,
    token: "chaos-token",
    host: "chaos",
    pingIntervalMs: 300,
    deadlineGraceMs: 500,
    maxReconnectDelayMs: 300,
  });
  const outcomes: Record<string, number> = {};
  const injected: Record<string, number> = {};
  let calls = 0;
  let sessionId = "";
  try {
    const session = await brain.sessions.create({ tools: [counted()] });
    sessionId = session.id;
    const call = async (ms: number, deadlineMs: number) => {
      const n = calls++;
      const deadline = Date.now() + deadlineMs;
      await tallyCall(n, deadline, () => session.call("counted", { n, ms }, { deadline }), outcomes, violations);
    };
    const load = (count: number) =>
      Promise.all(
        Array.from({ length: count }, () => call(rand() < 0.3 ? Math.floor(rand() * 400) : 0, 300 + rand() * 1_200)),
      );
    const servesAgain = async (fault: string) => {
      const until = Date.now() + 20_000;
      while (Date.now() < until) {
        const end = await session.call("counted", { n: -1, ms: 0 }, { timeoutMs: 1_000 }).catch(() => undefined);
        if (end?.outcome.status === "ok") return;
      }
      violations.push(`the client did not serve calls again within 20 s after ${fault}`);
    };
    const restart = async () => {
      server = undefined;
      for (let attempt = 0; attempt < 50 && !server; attempt++) {
        try {
          server = await start();
        } catch {
          // The port may still be held for a moment.
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      if (!server) throw new Error("the server did not start again");
    };

    for (let round = 0; round < faults; round++) {
      await load(4);
      const kind = kinds[Math.floor(rand() * kinds.length)];
      injected[kind] = (injected[kind] ?? 0) + 1;
      const running = load(6);
      // The fault lands somewhere in the calls' life.
      await new Promise((resolve) => setTimeout(resolve, rand() * 150));
      log(`round ${round}: ${kind}`);
      switch (kind) {
        case "cut":
        case "tear":
          proxy[kind]();
          break;
        case "delay":
          proxy.delay(100 + Math.floor(rand() * 500));
          await new Promise((resolve) => setTimeout(resolve, 800));
          proxy.heal();
          break;
        case "blackhole":
          proxy.blackhole();
          await new Promise((resolve) => setTimeout(resolve, 400 + rand() * 800));
          proxy.heal();
          break;
        case "kill":
          await server!.kill("SIGKILL");
          await server![Symbol.asyncDispose]();
          await restart();
          break;
        case "stop": {
          const pid = server!.process.pid;
          Deno.kill(pid, "SIGSTOP");
          await new Promise((resolve) => setTimeout(resolve, 200 + rand() * 1_500));
          Deno.kill(pid, "SIGCONT");
          break;
        }
        case "crashloop":
          for (let crash = 0; crash < 3; crash++) {
            await server!.kill("SIGKILL");
            await server![Symbol.asyncDispose]();
            await restart();
            await new Promise((resolve) => setTimeout(resolve, rand() * 300));
          }
          break;
      }
      await running;
      await servesAgain(`${kind} in round ${round}`);
    }
    const twice = [...dispatched].filter(([, count]) => count > 1);
    if (twice.length > 0) violations.push(`calls dispatched more than once: ${JSON.stringify(twice)}`);
  } finally {
    await brain.close();
    await proxy.close();
    await server?.[Symbol.asyncDispose]();
  }
  if (sessionId) {
    const reader = options.open ? await options.open() : await KvJournal.open(journal);
    try {
      // The server keeps host chaos's session under its host-scoped key.
      violations.push(...await checkJournal(reader, hostSessionKey("chaos", sessionId)));
    } finally {
      await reader.close();
    }
  }
  return { calls, faults: injected, outcomes, violations };
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}
