import assert from "node:assert/strict";
import { MAX_NAMED_ACTIVATIONS, RegisteredHost } from "../../src/host/server/registry.ts";
import { serverLimits } from "../../src/host/server/limits.ts";
import { Activation } from "../../src/session/activation.ts";

Deno.test("a server keeps the activations a host named last per session: naming new ids forever grows nothing, and an id named again after the last ones gets new budgets", () => {
  const host = new RegisteredHost("h", "hash", serverLimits());
  let made = 0;
  const named = (session: string, id: string) =>
    host.activation(session, id, () => {
      made++;
      return new Activation({ id, maxEmittedBytes: 100 });
    });
  const first = named("s", "first");
  assert.equal(named("s", "first"), first, "an id named again is the same budget");
  const other = named("t", "kept");
  for (let index = 0; index < 3 * MAX_NAMED_ACTIVATIONS; index++) {
    named("s", `id-${index}`);
    // Named again as the others come: the one in use stays.
    if (index % 100 === 0) assert.equal(named("s", "first"), first);
  }
  assert.equal(made, 2 + 3 * MAX_NAMED_ACTIVATIONS);
  const last = `id-${3 * MAX_NAMED_ACTIVATIONS - 1}`;
  const before = made;
  named("s", last);
  assert.equal(made, before, "the last named is kept");
  assert.notEqual(named("s", "id-0"), undefined);
  assert.equal(made, before + 1, "one named long before the last ones is made again");
  assert.equal(named("t", "kept"), other, "another session's activations are its own");
});
