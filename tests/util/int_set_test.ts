import assert from "node:assert/strict";
import { IntSet } from "../../src/util/int_set.ts";

Deno.test("IntSet holds what a Set holds through random adds and deletes, across growth and wrapped runs", () => {
  let seed = 7;
  const random = (below: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % below;
  const set = new IntSet();
  const reference = new Set<number>();
  for (let step = 0; step < 20_000; step++) {
    // Small values crowd few home slots (long runs that wrap); large ones reach past 2^31.
    const value = step % 3 === 0 ? 1 + random(40) : 1 + random(2 ** 31) * 3;
    if (random(3) === 0) assert.equal(set.delete(value), reference.delete(value));
    else {
      set.add(value);
      reference.add(value);
    }
    assert.equal(set.size, reference.size);
    if (step % 97 === 0) {
      for (const held of reference) assert.ok(set.has(held), `lost ${held}`);
      assert.deepEqual(set.values(), [...reference].sort((a, b) => a - b));
    }
  }
  for (const held of [...reference]) assert.ok(set.delete(held));
  assert.equal(set.size, 0);
  assert.deepEqual(set.values(), []);
});

Deno.test("IntSet refuses what is not a positive integer, and deleting an absent value changes nothing", () => {
  const set = new IntSet();
  for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 53]) assert.throws(() => set.add(bad), RangeError);
  set.add(5);
  assert.equal(set.delete(6), false);
  assert.equal(set.has(5), true);
  assert.equal(set.size, 1);
});
