import assert from "node:assert/strict";
import { onAborted, RacedAbortController, raceSignal } from "../../src/util/signal.ts";

for (const Controller of [AbortController, RacedAbortController]) {
  Deno.test(`raceSignal on ${Controller.name}: settles with its promise, every race rejects with the reason on abort`, async () => {
    const controller = new Controller();
    assert.equal(await raceSignal(Promise.resolve(1), controller.signal), 1);
    await assert.rejects(raceSignal(Promise.reject(new Error("inner")), controller.signal), /inner/);
    const pending = Array.from({ length: 3 }, () => raceSignal(new Promise<never>(() => {}), controller.signal));
    const settled = raceSignal(Promise.resolve("done"), controller.signal);
    assert.equal(await settled, "done");
    const reason = new Error("stopped");
    controller.abort(reason);
    for (const race of pending) await assert.rejects(race, (error) => error === reason);
    await assert.rejects(raceSignal(Promise.resolve(2), controller.signal), (error) => error === reason);
  });
}

for (const Controller of [AbortController, RacedAbortController]) {
  Deno.test(`raceSignal on an aborted ${Controller.name}: a promise that rejects later is no unhandled rejection`, async () => {
    const controller = new Controller();
    controller.abort(new Error("stopped"));
    const later = Promise.withResolvers<never>();
    await assert.rejects(raceSignal(later.promise, controller.signal), /stopped/);
    // Unhandled, it would fail this test (Deno fails a test on an unhandled rejection), as it would end a process.
    later.reject(new Error("rejected after nobody waits"));
    await new Promise((resolve) => setTimeout(resolve, 0));
  });
}

Deno.test("RacedAbortController's signal aborts like any other: listeners, reason, aborted", () => {
  const controller = new RacedAbortController();
  const heard: unknown[] = [];
  controller.signal.addEventListener("abort", () => heard.push(controller.signal.reason));
  controller.abort("why");
  controller.abort("again");
  assert.deepEqual(heard, ["why"]);
  assert.equal(controller.signal.aborted, true);
  assert.ok(controller.signal instanceof AbortSignal);
});

for (const Controller of [AbortController, RacedAbortController]) {
  Deno.test(`onAborted on ${Controller.name}: tells each watcher once on abort, at once when already aborted`, () => {
    const controller = new Controller();
    const heard: string[] = [];
    onAborted(controller.signal, () => heard.push("first"));
    onAborted(controller.signal, () => heard.push("second"));
    assert.equal(heard.length, 0);
    controller.abort("why");
    controller.abort("again");
    assert.deepEqual(heard.sort(), ["first", "second"]);
    onAborted(controller.signal, () => heard.push("late"));
    assert.deepEqual(heard.slice(2), ["late"]);
  });
}

Deno.test("a RacedAbortController's watcher that throws is reported; the other watchers and races are still told", async () => {
  const errors: unknown[] = [];
  const onError = (event: ErrorEvent) => (event.preventDefault(), errors.push(event.error));
  globalThis.addEventListener("error", onError);
  try {
    const controller = new RacedAbortController();
    const heard: string[] = [];
    onAborted(controller.signal, () => {
      throw new Error("watcher failed");
    });
    onAborted(controller.signal, () => heard.push("after"));
    const race = raceSignal(new Promise<never>(() => {}), controller.signal);
    controller.abort("stop");
    assert.deepEqual(heard, ["after"]);
    await assert.rejects(race, (error) => error === "stop");
    assert.equal((errors[0] as Error).message, "watcher failed");
  } finally {
    globalThis.removeEventListener("error", onError);
  }
});
