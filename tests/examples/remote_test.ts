import assert from "node:assert/strict";
import { ok } from "../../mod.ts";
import { main } from "../../examples/remote.ts";

Deno.test("examples/remote.ts: a Tool hosted over the WebSocket answers a call", async () => {
  const end = await main();
  assert.deepEqual([end.cause, end.outcome], ["finish", ok("hello Ada")]);
  assert.equal(end.sequence, 4, "started, event, result, finished");
});
