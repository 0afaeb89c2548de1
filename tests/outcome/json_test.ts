import assert from "node:assert/strict";
import { findNonJson, isJsonValue } from "../../mod.ts";
import { frozenJson } from "../../src/outcome/json.ts";
import { utf8Length } from "../../src/util/utf8.ts";

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

Deno.test("frozenJson copies plain JSON once, frozen to the leaves, and refuses what findNonJson refuses", () => {
  const shared = { x: [1, { y: "z" }] };
  const value = { a: shared, b: shared, n: null, t: true, proto: Object.assign(Object.create(null), { k: 1 }) };
  const copy = frozenJson(value) as typeof value;
  assert.deepEqual(JSON.stringify(copy), JSON.stringify(value));
  assert.notEqual(copy.a, shared);
  shared.x.push(2);
  assert.deepEqual(copy.a, { x: [1, { y: "z" }] });
  assert.ok(Object.isFrozen(copy) && Object.isFrozen(copy.a.x) && Object.isFrozen(copy.a.x[1]));
  assert.equal(Object.getPrototypeOf(copy.a), Object.prototype);
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  // deno-lint-ignore no-sparse-arrays
  for (const bad of [undefined, { a: undefined }, [NaN], 1n, new Date(0), cycle, [1, , 3], { f: () => 1 }]) {
    assert.equal(frozenJson(bad), undefined);
    assert.notEqual(findNonJson(bad), undefined);
  }
  const own = JSON.parse('{"__proto__": {"polluted": true}}');
  const copied = frozenJson(own) as Record<string, unknown>;
  assert.deepEqual(Object.keys(copied), ["__proto__"]);
  assert.equal(Object.getPrototypeOf(copied), Object.prototype);
});

Deno.test("utf8Length counts what TextEncoder would produce, lone surrogates as U+FFFD", () => {
  const encoder = new TextEncoder();
  for (const text of ["", "ascii", "é", "€uro", "😀", "a\uD800b", "\uDC00", "\uD83D", "mixed é € 😀 \uDFFF"]) {
    assert.equal(utf8Length(text), encoder.encode(text).byteLength, JSON.stringify(text));
  }
});
