import assert from "node:assert/strict";
import { z } from "zod";
import { tool } from "../../mod.ts";
import { embeddedSession } from "../_support/embedded_session.ts";
import { hasCode } from "../_support/has_code.ts";
import { trap } from "../_support/trap.ts";
import { errorFromWire } from "../../src/outcome/wire_error.ts";

const nested = (levels: number) => {
  let value: unknown = "bottom";
  for (let level = 0; level < levels; level++) value = { next: value };
  return value;
};
const depthOf = (value: unknown) => {
  let depth = 0;
  for (let at = value as { next?: unknown }; typeof at === "object" && at !== null; at = at.next as never) depth++;
  return depth;
};

Deno.test("hostile factory options: 100 000 levels, a __proto__ key and unreadable values are frozen copies or invalid_options", async () => {
  const configured = tool({
    name: "configured",
    description: "Reports how deep its options nest.",
    input: z.object({}),
    options: z.object({ tree: z.unknown() }),
    run: (_input, ctx) => ctx.finish({ depth: depthOf(ctx.options.tree), frozen: Object.isFrozen(ctx.options.tree) }),
  });
  await using session = await embeddedSession([configured({ tree: nested(100_000) })]);
  assert.deepEqual((await session.call("configured", {})).outcome, {
    status: "ok",
    value: { depth: 100_000, frozen: true },
  });
  const polluting = configured({ tree: JSON.parse('{"__proto__": {"polluted": true}}') });
  const tree = polluting.options.tree as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(tree), Object.prototype, "a __proto__ key stays a key");
  assert.deepEqual(Object.keys(tree), ["__proto__"]);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.throws(() => configured({ tree: { inner: trap() } }), hasCode("invalid_options"));
});

Deno.test("hostile wire errors: a code outside the closed list arrives as protocol_error naming it", () => {
  const error = errorFromWire({ code: "made_up", message: "m", details: { a: 1 } });
  assert.equal(error.code, "protocol_error");
  assert.match(error.message, /made_up/);
  assert.deepEqual(error.details, { a: 1 });
  assert.equal(errorFromWire({ code: "timeout", message: "m" }).code, "timeout");
});
