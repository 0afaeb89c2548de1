import assert from "node:assert/strict";
import { ok } from "../../mod.ts";
import { main } from "../../examples/remote.ts";
import { servedBrain } from "../_support/served_brain.ts";

Deno.test("examples/remote.ts: a Tool hosted over the WebSocket answers a call", async () => {
  const end = await main();
  assert.deepEqual([end.cause, end.outcome], ["finish", ok("hello Ada")]);
  assert.equal(end.sequence, 4, "started, event, result, finished");
});

Deno.test("examples/remote.ts against a server that knows only its operator token: it registers host app with it", async () => {
  await using server = await servedBrain({ serverToken: "operator secret" });
  const end = await main(server.url, "app secret", "operator secret");
  assert.deepEqual([end.cause, end.outcome], ["finish", ok("hello Ada")]);
});
