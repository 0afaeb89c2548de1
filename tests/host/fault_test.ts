import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, type HostConnectionEvent, tool } from "../../mod.ts";
import { createBrainServer } from "../../src/host/server/server.ts";
import { faultProxy } from "./fault_proxy.ts";
import { hostSessionKey } from "../../src/util/names.ts";

const serverToken = "operator-secret";
const CALLS = 1_000;
const BATCH = 8;
const DEADLINE_MS = 1_000;

Deno.test("through cuts, torn frames, delays and blackholes over 1,000 calls: each call is dispatched at most once, every caller settles by its deadline + 2 s, and the client serves calls again after every fault", async () => {
  const server = await createBrainServer({ serverToken, pingIntervalMs: 200 });
  // Aborted rather than shut down gracefully: Deno's graceful shutdown can wait forever on an
  // upgrade a fault cut in half.
  const stop = new AbortController();
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {}, signal: stop.signal }, server.fetch);
  const proxy = faultProxy(`http://127.0.0.1:${http.addr.port}`);
  const dispatched = new Map<number, number>();
  const counted = tool({
    name: "counted",
    description: "Counts its dispatch, sometimes emits, finishes with its input.",
    input: z.object({ n: z.number() }),
    run: async ({ n }, ctx) => {
      dispatched.set(ctx.sequence, (dispatched.get(ctx.sequence) ?? 0) + 1);
      if (n % 5 === 0) await ctx.emit("seen", n);
      return ctx.finish(n);
    },
  });
  const events: HostConnectionEvent[] = [];
  const brain = new Brain({
    url: proxy.url,
    serverToken,
    token: "faulty-token",
    host: "faulty",
    pingIntervalMs: 200,
    deadlineGraceMs: 500,
    maxReconnectDelayMs: 200,
    onConnection: (event) => events.push(event),
  });
  const late: string[] = [];
  const unexpected: unknown[] = [];
  const outcomes = new Map<string, number>();
  let started = 0;
  try {
    const session = await brain.sessions.create({ tools: [counted()] });
    const call = async () => {
      const n = started++;
      const deadline = Date.now() + DEADLINE_MS;
      let seen: string;
      try {
        const end = await session.call("counted", { n }, { deadline });
        seen = end.outcome.status === "error" ? end.outcome.error.code : end.cause;
      } catch (error) {
        if (!(error instanceof BrainError)) unexpected.push(error);
        seen = error instanceof BrainError ? error.code : String(error);
      }
      outcomes.set(seen, (outcomes.get(seen) ?? 0) + 1);
      if (Date.now() > deadline + 2_000) late.push(`call ${n} settled ${Date.now() - deadline} ms after its deadline`);
    };
    const batch = () => Promise.all(Array.from({ length: BATCH }, call));
    /** The client serves calls again: a call ends `ok` within 10 s of the fault healing. */
    const servesAgain = async (fault: string) => {
      const until = Date.now() + 10_000;
      while (Date.now() < until) {
        const end = await session.call("counted", { n: -1 }, { deadline: Date.now() + DEADLINE_MS })
          .catch(() => undefined);
        if (end?.outcome.status === "ok") return;
      }
      assert.fail(`the client did not serve calls again after ${fault}`);
    };

    const faults = ["cut", "tear", "delay", "blackhole"] as const;
    let round = 0;
    let injected = 0;
    while (started < CALLS) {
      round++;
      if (round % 10 !== 0) {
        await batch();
        continue;
      }
      const fault = faults[(round / 10) % faults.length];
      injected++;
      if (fault === "cut" || fault === "tear") {
        const running = batch();
        proxy[fault]();
        await running;
      } else {
        if (fault === "delay") proxy.delay(300);
        else proxy.blackhole();
        const running = batch();
        // The fault lasts beyond the calls' ping interval, so a silent link is noticed.
        await new Promise((resolve) => setTimeout(resolve, 700));
        proxy.heal();
        await running;
      }
      await servesAgain(fault);
    }

    assert.deepEqual(unexpected, []);
    assert.deepEqual(late, []);
    assert.deepEqual([...dispatched].filter(([, count]) => count > 1), [], "no call was dispatched twice");
    assert.ok(outcomes.get("finish")! > CALLS / 2, `most calls finished: ${JSON.stringify([...outcomes])}`);
    // Calls whose caller gave up on a dead link end by their deadline on the server; follow until they have.
    const records = [];
    const open = new Set<number>();
    for await (
      const record of server.journal.subscribe(hostSessionKey("faulty", session.id), {
        signal: AbortSignal.timeout(5_000),
      })
    ) {
      records.push(record);
      if (record.kind === "tool_call_started") open.add(record.sequence);
      if (record.kind === "tool_call_finished") open.delete(record.call);
      if (
        open.size === 0 && record.sequence >= (await server.journal.read(hostSessionKey("faulty", session.id))).length
      ) break;
    }
    const startedCalls = records.filter((record) => record.kind === "tool_call_started").map((r) => r.sequence);
    const finished = records.filter((record) => record.kind === "tool_call_finished").map((r) => r.call);
    assert.deepEqual(finished.toSorted((a, b) => a - b), startedCalls, "every call has exactly one terminal record");
    const noticed = events.filter((event) => event.type !== "attached");
    assert.ok(noticed.length >= injected, `the application was told of the ${injected} faults`);
    for (const event of noticed) assert.ok(event.error instanceof BrainError && event.retryInMs! >= 0);
  } finally {
    await brain.close();
    await proxy.close();
    await server.close();
    stop.abort();
    await http.finished;
  }
});
