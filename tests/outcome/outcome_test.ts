import assert from "node:assert/strict";
import { fail, ok } from "../../mod.ts";
import { isEnvelope } from "../../src/outcome/outcome.ts";
import { parseEnvelope } from "../../src/outcome/outcome.ts";

Deno.test("only the reserved top-level statuses mark an envelope", () => {
  for (const status of ["ok", "error", "timeout", "cancelled", "unknown"]) assert.equal(isEnvelope({ status }), true);
  assert.equal(isEnvelope({ status: "pending" }), false);
  assert.equal(isEnvelope({ data: { status: "ok" } }), false);
  assert.equal(isEnvelope([{ status: "ok" }]), false);
  assert.equal(isEnvelope("ok"), false);
});

Deno.test("well-formed envelopes parse; malformed ones say why", () => {
  assert.deepEqual(parseEnvelope(ok(1)), { outcome: { status: "ok", value: 1 } });
  const error = fail("not_found", "missing", { retryable: true, details: { id: "7" } });
  assert.deepEqual(parseEnvelope(error), { outcome: error });
  assert.deepEqual(parseEnvelope({ status: "timeout" }), { outcome: { status: "timeout" } });
  for (
    const malformed of [
      { status: "error" },
      { status: "error", error: { message: "no code" } },
      { status: "error", error: { code: "x", message: "m", retryable: "yes" } },
      { status: "ok", value: 1, extra: true },
      { status: "cancelled", message: 5 },
    ]
  ) {
    assert.ok("malformed" in parseEnvelope(malformed), JSON.stringify(malformed));
  }
});
