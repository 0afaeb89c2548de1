import assert from "node:assert/strict";
import { ownedError } from "../../src/journal/lease.ts";
import { BrainError } from "../../src/outcome/errors.ts";

Deno.test("ownedError names the holder's expiry as a time, or as the number a stored lease holds when no Date can", () => {
  const soon = ownedError("s", { owner: "n", expiresAt: Date.UTC(2030, 0, 1) });
  assert.ok(soon instanceof BrainError && soon.code === "session_owned");
  assert.match(soon.message, /owned by n until 2030-01-01T00:00:00\.000Z/);
  // What a hand can leave in a store's lease: a bigint column past any Date, or a value read as Infinity.
  for (const expiresAt of [9e18, Infinity]) {
    const error = ownedError("s", { owner: "n", expiresAt });
    assert.equal(error.code, "session_owned");
    assert.match(error.message, new RegExp(`until ${expiresAt} ms`));
    assert.deepEqual(error.details, { owner: "n", expiresAt });
  }
});
