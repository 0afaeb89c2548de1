import assert from "node:assert/strict";
import { main } from "../../examples/mcp.ts";
import { ofKind } from "../_support/until.ts";
import { pathWithThisDeno } from "../_support/spawn_deno.ts";

Deno.test("examples/mcp.ts: an Agentloop calls server-everything, and an MCP client calls the served session", async () => {
  // The example starts its MCP server as `deno`: this very Deno, never another on PATH.
  const path = Deno.env.get("PATH");
  Deno.env.set("PATH", pathWithThisDeno());
  let shown;
  try {
    shown = await main();
  } finally {
    if (path === undefined) Deno.env.delete("PATH");
    else Deno.env.set("PATH", path);
  }
  const { records, listed, progress, text } = shown;
  assert.deepEqual(listed, ["echo", "get-sum", "trigger-long-running-operation"]);
  const calls = ofKind(records, "tool_call_started");
  assert.equal(calls.length, 2, "one call from the Agentloop, one from the MCP client");
  for (const call of calls) {
    const own = records.filter((record) => "call" in record && record.call === call.sequence);
    assert.deepEqual(own.map((record) => record.kind).filter((kind) => kind !== "tool_message"), [
      "tool_event",
      "tool_event",
      "tool_result",
      "tool_call_finished",
    ]);
  }
  assert.ok(progress.length > 0 && progress.every((message) => JSON.parse(message).event === "progress"));
  assert.equal(text, "Long running operation completed. Duration: 0.2 seconds, Steps: 2.");
});
