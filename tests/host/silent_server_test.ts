import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { MemoryJournal } from "../../src/journal/memory.ts";
import type { AppendOptions } from "../../src/journal/lease.ts";
import type { JournalRecord, RecordBody } from "../../src/journal/records.ts";
import { hasCode } from "../_support/has_code.ts";
import { withDeadline } from "../_support/deadline.ts";
import { gate } from "../_support/gate.ts";
import { servedBrain } from "../_support/served_brain.ts";

/** A journal whose store never answers a call's terminal commit: its server stays alive and never ends the call. */
class EndlessEnds extends MemoryJournal {
  override append(sessionId: string, bodies: RecordBody[], options?: AppendOptions): Promise<JournalRecord[]> {
    if (bodies.some((body) => body.kind === "tool_call_finished")) return new Promise(() => {});
    return super.append(sessionId, bodies, options);
  }
}

const serverToken = "operator-secret";

Deno.test("a remote call cancelled on a server that answers pings but never confirms its end settles connection_lost once the grace passed", async () => {
  await using server = await servedBrain({ serverToken, journal: new EndlessEnds() });
  await using brain = new Brain({
    url: server.url,
    serverToken,
    token: "t",
    host: "silent",
    pingIntervalMs: 100,
    deadlineGraceMs: 200,
  });
  const started = gate();
  const waiting = tool({
    name: "waiting",
    description: "Runs until its call ends.",
    input: z.object({}),
    run: async (_input, ctx) => {
      started.open();
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
    },
  });
  const session = await brain.sessions.create({ tools: [waiting()] });
  const controller = new AbortController();
  const byCaller = session.call("waiting", {}, { signal: controller.signal });
  const told = assert.rejects(withDeadline(byCaller, "the cancelled caller to settle"), hasCode("connection_lost"));
  await started.wait;
  controller.abort();
  await told;
  const handle = await session.start("waiting", {});
  await assert.rejects(withDeadline(handle.cancel(), "cancel() to settle"), hasCode("connection_lost"));
  await assert.rejects(withDeadline(handle.ended, "the handle's end to settle"), hasCode("connection_lost"));
});
