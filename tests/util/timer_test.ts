import assert from "node:assert/strict";
import { callAt } from "../../src/util/timer.ts";

Deno.test("callAt fires once, never before its wall-clock time", async () => {
  const at = Date.now() + 25;
  const fired: number[] = [];
  await new Promise<void>((resolve) => callAt(at, () => (fired.push(Date.now()), resolve())));
  assert.equal(fired.length, 1);
  assert.ok(fired[0] >= at);
});

Deno.test("callAt fires at once for a past time, and cancelling stops a pending call", async () => {
  let past = 0;
  callAt(Date.now() - 1, () => past++);
  assert.equal(past, 1);
  let cancelled = 0;
  const at = Date.now() + 10;
  const cancel = callAt(at, () => cancelled++);
  cancel();
  // A later call firing is the sentinel: the cancelled call's time has passed without it.
  await new Promise<void>((resolve) => callAt(at + 10, resolve));
  assert.equal(cancelled, 0);
});
