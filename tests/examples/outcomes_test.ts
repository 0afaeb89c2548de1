import assert from "node:assert/strict";
import { fail, ok } from "../../mod.ts";
import { main as outcomes } from "../../examples/outcomes.ts";

Deno.test("examples/outcomes.ts: every way a Tool ends", async () => {
  const ends = await outcomes();
  assert.deepEqual(ends.finishes.outcome, ok({ id: "7" }));
  assert.deepEqual(ends.fails.outcome, fail("not_found", "no record 7", { retryable: false, details: { id: "7" } }));
  assert.deepEqual(ends.reserved_data.outcome, ok({ id: "7", status: "error" }));
  assert.deepEqual([ends.throws.cause, ends.throws.outcome.status], ["error", "error"]);
  assert.deepEqual([ends.background.cause, ends.background.outcome], ["finish", ok({ id: "7", done: true })]);
  assert.deepEqual([ends.forgets.cause, ends.forgets.outcome.status], ["timeout", "timeout"]);
});
