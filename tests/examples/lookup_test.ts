import assert from "node:assert/strict";
import { ok } from "../../mod.ts";
import { main as lookup } from "../../examples/lookup.ts";

Deno.test("examples/lookup.ts: emits before finishing, finds a record and returns null for a missing one", async () => {
  const records = await lookup();
  assert.deepEqual(records.map((record) => record.kind), [
    "tool_call_started",
    "tool_event",
    "tool_result",
    "tool_call_finished",
    "tool_call_started",
    "tool_event",
    "tool_result",
    "tool_call_finished",
  ]);
  const finished = records.filter((record) => record.kind === "tool_call_finished");
  assert.deepEqual(finished.map((record) => record.kind === "tool_call_finished" && record.outcome), [
    ok({ value: "Ada Lovelace" }),
    ok(null),
  ]);
});
