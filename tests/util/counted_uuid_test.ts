import assert from "node:assert/strict";
import { countedUuid, countOfUuid, uuidOfCount } from "../../src/util/counted_uuid.ts";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

Deno.test("counted ids are distinct version 4 UUIDs that share the process's random prefix, each read back from its count", () => {
  const ids = Array.from({ length: 70_000 }, () => countedUuid());
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.match(id, UUID_V4);
  assert.ok(ids.every((id) => id.startsWith(ids[0].slice(0, 24))));
  for (const id of [ids[0], ids[255], ids[256], ids[65_535], ids[65_536], ids.at(-1)!]) {
    const count = countOfUuid(id);
    assert.ok(count >= 0, id);
    assert.equal(uuidOfCount(count), id);
    // The same id as another string (not the one made last) is found as well.
    assert.equal(countOfUuid(id.split("").join("")), count);
  }
});

Deno.test("an id countedUuid did not make has no count: another UUID, one in upper case, one past the last count, one too long", () => {
  const id = countedUuid();
  const prefix = id.slice(0, 24);
  for (
    const other of [
      crypto.randomUUID(),
      prefix + "FFFFFFFFFFFF",
      prefix + "ffffffffffff",
      prefix + "00000000000g",
      id + "0",
      id.slice(0, 35),
      "",
    ]
  ) assert.equal(countOfUuid(other), -1, other);
});
