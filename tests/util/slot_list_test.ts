import assert from "node:assert/strict";
import { SlotList } from "../../src/util/slot_list.ts";

Deno.test("SlotList holds each member once until it is deleted, whatever the order of deletes", () => {
  const list = new SlotList<{ id: number; slot: number }>();
  const members = Array.from({ length: 50 }, (_, id) => ({ id, slot: -1 }));
  for (const member of members) list.add(member);
  const kept = new Set(members);
  for (const index of [0, 49, 25, 1, 48, 24, 26, 2]) {
    list.delete(members[index]);
    list.delete(members[index]); // a second delete changes nothing
    kept.delete(members[index]);
    assert.equal(members[index].slot, -1);
    assert.deepEqual(new Set(list.values()), kept);
  }
  for (const member of kept) list.delete(member);
  assert.deepEqual(list.values(), []);
});

Deno.test("SlotList ignores a member of another list", () => {
  const first = new SlotList<{ slot: number }>();
  const second = new SlotList<{ slot: number }>();
  const mine = { slot: -1 };
  const theirs = { slot: -1 };
  first.add(mine);
  second.add(theirs);
  first.delete(theirs);
  assert.deepEqual(first.values(), [mine]);
  assert.equal(theirs.slot, 0);
});
