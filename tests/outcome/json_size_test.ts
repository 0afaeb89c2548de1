import assert from "node:assert/strict";
import { frozenJsonSized, jsonSize } from "../../src/outcome/json.ts";
import { utf8Length } from "../../src/util/utf8.ts";

/** What Brain charged before: the UTF-8 size of the JSON text. */
const textSize = (value: unknown) => utf8Length(JSON.stringify(value));

/** frozenJsonSized copies `value` whole and counts the size jsonSize gives. */
function assertSizedCopy(value: unknown): void {
  const sized = frozenJsonSized(value);
  assert.ok(sized, JSON.stringify(value));
  assert.equal(sized.size, textSize(value), JSON.stringify(value));
  assert.equal(JSON.stringify(sized.copy), JSON.stringify(value));
}

Deno.test("jsonSize is the UTF-8 size of JSON.stringify's text for every kind of JSON value", () => {
  const strings = [
    "",
    "plain",
    'quote " and backslash \\',
    "\b\f\n\r\t",
    "\u0000\u0001\u001f\u007f",
    "é ü ß", // two bytes each
    "€ 中文", // three bytes each
    "😀 pair", // a surrogate pair: four bytes
    "\ud800 lone high",
    "lone low \udc00",
    "\udbff\udfff",
    "\udc00\ud800", // reversed: two lone surrogates
    "end high \ud83d",
  ];
  const numbers = [0, -0, 1, -1, 42, 1.5, -2.25, 1e21, 1e-7, 123456789012345680000, Number.MAX_VALUE, 5e-324, 2 ** 53];
  for (let power = 0; power <= 22; power++) {
    numbers.push(10 ** power, 10 ** power - 1, -(10 ** power), 10 ** power + 0.5);
  }
  numbers.push(999999999999999900000, 1e21 - 65536, -999999999999999900000, -1e21);
  const values: unknown[] = [
    null,
    true,
    false,
    ...strings,
    ...numbers,
    [],
    {},
    [1, "two", null, [3, [4]], { five: 5 }],
    { a: 1, b: 2 },
    { 'key with "quote"': "€", "😀": [true, false], nested: { deeper: { deepest: [] } } },
    Object.assign(Object.create(null), { x: 1 }),
    JSON.parse('{"__proto__": {"own": true}}'),
    Object.fromEntries(strings.map((text, index) => [text, index])),
  ];
  for (const value of values) {
    assert.equal(jsonSize(value), textSize(value), JSON.stringify(value));
    assertSizedCopy(value);
  }
});

Deno.test("jsonSize matches the text of random nested values", () => {
  let seed = 11;
  const random = (below: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % below;
  const units = [0x22, 0x5c, 0x0a, 0x01, 0x41, 0xe9, 0x20ac, 0xd83d, 0xde00, 0xdc00];
  const text = () => String.fromCharCode(...Array.from({ length: random(6) }, () => units[random(units.length)]));
  const value = (depth: number): unknown => {
    switch (random(depth > 3 ? 4 : 6)) {
      case 0:
        return text();
      case 1:
        return (random(2_000_001) - 1_000_000) / (random(3) === 0 ? 7 : 1);
      case 2:
        return random(2) === 0 ? null : random(2) === 0;
      case 3:
        return random(1_000);
      case 4:
        return Array.from({ length: random(4) }, () => value(depth + 1));
      default:
        return Object.fromEntries(Array.from({ length: random(4) }, () => [text(), value(depth + 1)]));
    }
  };
  for (let round = 0; round < 2_000; round++) {
    const sample = value(0);
    assert.equal(jsonSize(sample), textSize(sample), JSON.stringify(sample));
    assertSizedCopy(sample);
  }
});

Deno.test("jsonSize is -1 for what is not plain JSON, as findNonJson finds it", () => {
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  let deep: unknown = 1;
  for (let depth = 0; depth < 300; depth++) deep = [deep];
  for (
    const value of [
      undefined,
      Number.NaN,
      Infinity,
      10n,
      Symbol("s"),
      () => 1,
      new Date(0),
      { a: undefined },
      [1, undefined],
      Object.assign(new Array(2), { 1: 1 }),
      { nested: [{ bad: Number.NaN }] },
      cycle,
      deep,
    ]
  ) {
    assert.equal(jsonSize(value), -1);
    assert.equal(frozenJsonSized(value), undefined);
  }
  // A value seen twice without a cycle is JSON.
  const shared = { x: "y" };
  assert.equal(jsonSize({ a: shared, b: shared }), textSize({ a: shared, b: shared }));
});

Deno.test("frozenJsonSized counts its own copy when a getter it reads sizes another", () => {
  let inner: ReturnType<typeof frozenJsonSized>;
  const value = {
    before: "text",
    get middle() {
      inner = frozenJsonSized({ other: ["x", "y"] });
      return [1, 2];
    },
    after: { deep: true },
  };
  const sized = frozenJsonSized(value);
  assert.deepEqual(sized, {
    copy: { before: "text", middle: [1, 2], after: { deep: true } },
    size: textSize({ before: "text", middle: [1, 2], after: { deep: true } }),
  });
  assert.deepEqual(inner!, { copy: { other: ["x", "y"] }, size: textSize({ other: ["x", "y"] }) });
});
