import assert from "node:assert/strict";
import { RacedAbortController, raceSignal } from "../../src/util/signal.ts";

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
