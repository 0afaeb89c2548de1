import assert from "node:assert/strict";
import { findNonJson, isJsonValue } from "../../src/outcome/json.ts";

Deno.test("plain JSON values pass, including null-prototype objects", () => {
  assert.equal(findNonJson({ a: [1, "x", true, null, { b: 2.5 }] }), undefined);
  assert.equal(isJsonValue(Object.assign(Object.create(null), { a: 1 })), true);
});

Deno.test("undefined, non-finite numbers, BigInt and class instances are not JSON", () => {
  assert.equal(findNonJson(undefined), "$ is undefined");
  assert.equal(findNonJson({ a: { b: undefined } }), "$.a.b is undefined");
  assert.equal(findNonJson([NaN]), "$[0] is NaN");
  assert.equal(findNonJson({ n: Infinity }), "$.n is Infinity");
  assert.equal(findNonJson({ n: 1n }), "$.n is bigint");
  assert.equal(findNonJson({ d: new Date(0) }), "$.d is an instance of Date");
  assert.equal(findNonJson(new (class Point {})()), "$ is an instance of Point");
  assert.equal(findNonJson({ f: () => 1 }), "$.f is function");
});

Deno.test("cycles and sparse arrays are not JSON, shared references are", () => {
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  assert.equal(findNonJson(cycle), "$.self is a cycle");
  // deno-lint-ignore no-sparse-arrays
  assert.equal(findNonJson([1, , 3]), "$[1] is a hole");
  const shared = { x: 1 };
  assert.equal(findNonJson({ a: shared, b: shared }), undefined);
});
