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

Deno.test("callAt keeps many pending calls on one timer: each fires once in time order, cancelled ones never", async () => {
  const start = Date.now();
  const fired: { index: number; at: number; when: number }[] = [];
  const cancels: (() => void)[] = [];
  const done = Promise.withResolvers<void>();
  const ats = Array.from({ length: 40 }, (_, index) => start + 5 + (index * 7) % 31);
  for (const [index, at] of ats.entries()) {
    cancels.push(callAt(at, () => {
      fired.push({ index, at, when: Date.now() });
      if (fired.length === 30) done.resolve();
    }));
  }
  // The earliest and a few others are cancelled: the timer moves on to what is left.
  const cancelled = new Set([0, 1, 5, 9, 13, 17, 21, 25, 29, 33]);
  for (const index of cancelled) cancels[index]();
  await done.promise;
  // The last one due is the sentinel: every other time has passed by the time it fires.
  assert.equal(fired.length, 30);
  assert.ok(fired.every(({ index }) => !cancelled.has(index)));
  assert.ok(fired.every(({ at, when }) => when >= at));
  for (let i = 1; i < fired.length; i++) assert.ok(Math.ceil(fired[i - 1].at) <= Math.ceil(fired[i].at));
  // Cancelling after firing does nothing.
  for (const cancel of cancels) cancel();
});

Deno.test("callAt calls the same callback once per scheduling, and a throwing callback stops no other", async () => {
  const errors: unknown[] = [];
  const onError = (event: ErrorEvent) => (event.preventDefault(), errors.push(event.error));
  globalThis.addEventListener("error", onError);
  try {
    let count = 0;
    const callback = () => count++;
    const at = Date.now() + 5;
    callAt(at, callback);
    callAt(at, callback);
    callAt(at, () => {
      throw new Error("boom");
    });
    await new Promise<void>((resolve) => callAt(at + 1, resolve));
    assert.equal(count, 2);
    assert.equal((errors[0] as Error).message, "boom");
  } finally {
    globalThis.removeEventListener("error", onError);
  }
});

Deno.test("a call far beyond setTimeout's range waits, and cancelling it leaves no timer behind", () => {
  const cancel = callAt(Date.now() + 2 ** 32, () => assert.fail("fired"));
  cancel();
});
