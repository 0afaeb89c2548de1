import assert from "node:assert/strict";
import { raceSignal } from "../../src/util/signal.ts";

Deno.test("raceSignal settles with its promise, and every race on a signal rejects with its reason when it aborts", async () => {
  const controller = new AbortController();
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
