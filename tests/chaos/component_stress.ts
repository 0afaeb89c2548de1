/**
 * A Component sandbox under a seeded random run of calls that trap, spin past
 * their deadline, are cancelled mid-spin, fail, emit and succeed, some two at a
 * time. Checks that every call runs in a fresh instance (`count` is 1), is
 * dispatched once (one emit per `emit_then_echo`), ends with the cause its
 * kind implies, that the session's records keep the journal invariants, and
 * that no sandbox or reaper is left after the Brain closes.
 */
import { probeTool, reader, readerBrain } from "../_support/components.ts";
import { runningChildren, runningSandboxes, within } from "../_support/processes.ts";
import { journalViolations } from "./invariants.ts";
import { random } from "./random.ts";
import type { CampaignReport } from "./remote_campaign.ts";

const KINDS = ["count", "trap", "timeout", "cancel", "fail", "emit_then_echo"] as const;
type Kind = typeof KINDS[number];
const EXPECTED: Record<Kind, string> = {
  count: "ok",
  trap: "error",
  timeout: "timeout",
  cancel: "cancelled",
  fail: "error",
  emit_then_echo: "ok",
};

/** Runs `calls` calls; returns what it saw. */
export async function componentStress({ seed, calls }: { seed: number; calls: number }): Promise<CampaignReport> {
  const rand = random(seed);
  const violations: string[] = [];
  const outcomes: Record<string, number> = {};
  const brain = readerBrain();
  const tools = ["count", "trap", "spin", "fail", "emit_then_echo"].map((name) => probeTool(name)({ env: reader }));
  try {
    const session = await brain.sessions.create({ tools });
    const one = async (kind: Kind, n: number) => {
      const deadline = Date.now() + (kind === "timeout" ? 150 + Math.floor(rand() * 150) : 10_000);
      const input = kind === "emit_then_echo" || kind === "fail" ? { status: "ok", value: n } : null;
      const tool = kind === "timeout" || kind === "cancel" ? "spin" : kind;
      const call = await session.start(tool, input, { deadline });
      if (kind === "cancel") {
        // Cancelled once the guest runs (its emit is committed), or before it does.
        if (rand() < 0.7) {
          for await (const record of session.records({ from: call.sequence, signal: AbortSignal.timeout(5_000) })) {
            if (record.kind === "tool_event" && record.call === call.sequence) break;
          }
        }
        await call.cancel();
      }
      const end = await call.ended;
      const seen = end.outcome.status === "error" ? `${kind}:${end.outcome.error.code}` : `${kind}:${end.cause}`;
      outcomes[seen] = (outcomes[seen] ?? 0) + 1;
      if (end.outcome.status !== EXPECTED[kind]) {
        violations.push(`call ${end.call} (${kind}) ended ${JSON.stringify(end.outcome)}`);
      }
      if (kind === "count" && end.outcome.status === "ok" && end.outcome.value !== 1) {
        violations.push(`call ${end.call} ran in a reused instance: count ${end.outcome.value}`);
      }
      if (kind === "emit_then_echo" && JSON.stringify(end.outcome) !== JSON.stringify(input)) {
        violations.push(`call ${end.call} echoed ${JSON.stringify(end.outcome)}, not its input`);
      }
    };
    for (let n = 0; n < calls;) {
      const together = rand() < 0.3 ? 2 : 1;
      const batch = Array.from({ length: together }, () => one(KINDS[Math.floor(rand() * KINDS.length)], n++));
      await Promise.all(batch);
    }
    const records = await session.read();
    violations.push(...journalViolations(records));
    for (const record of records) {
      if (record.kind !== "tool_call_started" || record.tool !== "emit_then_echo") continue;
      const emits = records.filter((r) => r.kind === "tool_event" && r.call === record.sequence).length;
      if (emits !== 1) violations.push(`emit_then_echo call ${record.sequence} emitted ${emits} times`);
    }
  } catch (error) {
    violations.push(`the run failed: ${error}`);
  } finally {
    await brain.close();
  }
  if ((await runningSandboxes()).length > 0) violations.push("a sandbox outlived brain.close()");
  await within(1_000, "the reaper to go", async () => (await runningChildren("reaper_main.ts")).length === 0)
    .catch((error) => violations.push(String(error)));
  return { calls, faults: {}, outcomes, violations };
}
