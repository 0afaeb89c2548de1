import assert from "node:assert/strict";
import { Component } from "../../mod.ts";
import { inspect, main } from "../../examples/inspect/inspect.ts";

Deno.test("examples/inspect/inspect.ts: lists its workspace through the Component", async () => {
  const { outcome, kinds } = await main();
  assert.deepEqual(outcome, {
    status: "ok",
    value: { eventSequence: 2, entries: ["docs/", "docs/guides/", "docs/readme.md"] },
  });
  assert.deepEqual(kinds, ["tool_call_started", "tool_event", "tool_result", "tool_call_finished"]);
});

Deno.test("an imported Tool factory carries its executable reference, resolved against its own module", () => {
  const { implementation } = inspect({ depth: 1 });
  assert.ok(implementation instanceof Component);
  assert.equal(implementation.url.href, new URL("../../examples/inspect/inspect.wasm", import.meta.url).href);
});
