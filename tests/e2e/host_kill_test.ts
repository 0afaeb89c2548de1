import assert from "node:assert/strict";
import type { JournalRecord } from "../../src/journal/records.ts";
import { denoScript, waitForKey } from "../_support/deno_script.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { servedBrain } from "../_support/served_brain.ts";

const APP = "tests/e2e/fixtures/host_app.ts";

Deno.test("a host process killed mid-call leaves the call unknown; the restarted host never sees it again", async () => {
  await using server = await servedBrain({ hostTokens: { crashy: "kill-token" } });
  await using first = denoScript(APP, [server.url, "kill-token", "crashy", "start"]);
  const { session } = await waitForKey(first, "session") as { session: string };
  const { invoked: lost } = await waitForKey(first, "invoked") as { invoked: number };
  first.process.kill("SIGKILL");
  const status = await first.process.status;
  assert.equal(status.signal, "SIGKILL");

  const finished = await finishedRecord(
    server.journal.subscribe(hostSessionKey("crashy", session), { from: lost }),
    lost,
  );
  assert.equal(finished.kind === "tool_call_finished" && finished.cause, "unknown");
  assert.equal(finished.kind === "tool_call_finished" && finished.outcome.status, "unknown");

  await using second = denoScript(APP, [server.url, "kill-token", "crashy", "reattach", session]);
  const lines: Record<string, unknown>[] = [];
  for (let line = await second.line(); line !== undefined; line = await second.line()) lines.push(JSON.parse(line));
  assert.equal((await second.process.status).code, 0);
  const invocations = lines.filter((line) => "invoked" in line).map((line) => line.invoked);
  const ended = lines.find((line) => "ended" in line)?.ended as { call: number; outcome: unknown };
  assert.deepEqual(invocations, [ended.call], "the restarted host ran only the new call");
  assert.notEqual(ended.call, lost);
  assert.deepEqual(ended.outcome, { status: "ok", value: "done" });

  const records = await server.journal.read(hostSessionKey("crashy", session));
  const ofLost = records.filter((record) => "call" in record && record.call === lost).map((record) => record.kind);
  assert.deepEqual(ofLost, ["tool_event", "tool_call_finished"], "nothing of the lost call after its end");
  assert.equal(records.filter((record) => record.kind === "tool_call_started").length, 2);
});

async function finishedRecord(records: AsyncIterable<JournalRecord>, call: number): Promise<JournalRecord> {
  for await (const record of records) {
    if (record.kind === "tool_call_finished" && record.call === call) return record;
  }
  throw new Error(`call ${call} never finished`);
}
