import assert from "node:assert/strict";
import { PackedChunk } from "../../src/journal/packed_chunk.ts";
import { StringTable } from "../../src/journal/string_table.ts";
import { countedUuid } from "../../src/util/counted_uuid.ts";

/** A pseudo-random JSON value of every kind a record can hold, from `next` (deterministic per seed). */
function jsonValue(next: () => number, depth = 0): unknown {
  const pick = Math.floor(next() * (depth > 3 ? 6 : 9));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return next() < 0.5;
    case 2:
      return NUMBERS[Math.floor(next() * NUMBERS.length)];
    case 3:
      return Math.floor(next() * 1e6) - 5e5;
    case 4:
    case 5:
      return text(next);
    case 6:
      return Array.from({ length: Math.floor(next() * 5) }, () => jsonValue(next, depth + 1));
    default: {
      const object: Record<string, unknown> = {};
      const count = Math.floor(next() * 5);
      for (let index = 0; index < count; index++) {
        const key = ["a", "b", "status", "value", "1", "10", "", "__proto__", "constructor", text(next)][
          Math.floor(next() * 10)
        ];
        const value = jsonValue(next, depth + 1);
        if (key === "__proto__") {
          Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
        } else object[key] = value;
      }
      return object;
    }
  }
}

const NUMBERS = [
  0,
  -0,
  1,
  -1,
  -16,
  -17,
  111,
  112,
  2 ** 31 - 1,
  -(2 ** 31),
  2 ** 31,
  -(2 ** 31) - 1,
  2 ** 53 - 1,
  0.1,
  1e300,
];

function text(next: () => number): string {
  if (next() < 0.1) return UUIDS[Math.floor(next() * UUIDS.length)];
  if (next() < 0.1) return `name${Math.floor(next() * 200)}`;
  const samples = ["", "ok", "step", "é", "日本語", "😀", "\ud800", "\udc00x", "\u0000", "a\nb", "ÿ", "Ā"];
  const base = samples[Math.floor(next() * samples.length)];
  const length = [0, 1, 5, 33, 300, 2000][Math.floor(next() * 6)];
  return base + "x".repeat(length) + base;
}

/** UUIDs packed in 16 bytes (lowercase), and strings that only look like one. */
const UUIDS = [
  "34c4d95f-9a2c-4f04-a671-f359be3595cc",
  "00000000-0000-0000-0000-000000000000",
  "ffffffff-ffff-ffff-ffff-ffffffffffff",
  "34C4D95F-9A2C-4F04-A671-F359BE3595CC",
  "34c4d95f-9a2c-4f04-a671-f359be3595cg",
  "34c4d95f99a2c-4f04-a671-f359be3595cc",
  "34c4d95f-9a2c-4f04-a671-f359be3595c-",
  "-34c4d95f-9a2c-4f04-a671-f359be3595c",
  // Ids this process counts, packed as their counts, and one with their prefix it never counted.
  ...Array.from({ length: 3 }, () => countedUuid()),
  countedUuid().replace(/.{4}$/, "ffff"),
];

function seeded(seed: number): () => number {
  return () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
}

/** Equal as the same JSON would be, and with -0 and key order kept too. */
function assertSame(actual: unknown, expected: unknown, path = "$"): void {
  if (typeof expected !== "object" || expected === null) {
    assert.ok(Object.is(actual, expected), `${path}: ${String(actual)} is not ${String(expected)}`);
    return;
  }
  assert.ok(Object.isFrozen(actual), `${path} is frozen`);
  assert.equal(Array.isArray(actual), Array.isArray(expected), `${path} kind`);
  assert.deepEqual(Object.keys(actual as object), Object.keys(expected), `${path} keys`);
  if (!Array.isArray(expected)) assert.equal(Object.getPrototypeOf(actual), Object.prototype, `${path} prototype`);
  for (const key of Object.keys(expected)) {
    assertSame((actual as Record<string, unknown>)[key], (expected as Record<string, unknown>)[key], `${path}.${key}`);
  }
}

Deno.test("a packed chunk gives back every JSON value it packed, exactly (-0, wide and lone code units, odd keys), and skips each", () => {
  const next = seeded(42);
  const strings = new StringTable();
  const chunk = new PackedChunk(16);
  const values = Array.from({ length: 3000 }, () => jsonValue(next));
  const starts = values.map((value) => {
    const start = chunk.used;
    chunk.write(value, strings);
    return start;
  });
  values.forEach((value, index) => {
    const cursor = { at: starts[index] };
    assertSame(chunk.read(cursor, strings), value, `value ${index}`);
    assert.equal(cursor.at, starts[index + 1] ?? chunk.used, `value ${index} ends where the next starts`);
    const skipped = { at: starts[index] };
    chunk.skip(skipped);
    assert.equal(skipped.at, cursor.at, `skipping value ${index} ends where reading it does`);
  });
});

Deno.test("a packed time is exact whether it is near its base or not", () => {
  const chunk = new PackedChunk(8);
  const base = 1_796_356_646_888;
  const times = [base, base + 1, base - 1, base + 2 ** 31 - 1, base + 2 ** 31, base - 2 ** 31 - 5, 0.5, -0, 1e300];
  const starts = times.map((at) => {
    const start = chunk.used;
    chunk.time(at, base);
    return start;
  });
  times.forEach((at, index) => assert.ok(Object.is(chunk.readTime({ at: starts[index] }, base), at), `time ${at}`));
});

Deno.test("objects whose key lists share a hash past its bound pack their own keys, and read back the same", () => {
  const strings = new StringTable();
  const chunk = new PackedChunk(16);
  // Same length, first and last character: one hash for all ten lists.
  const values = Array.from({ length: 10 }, (_, index) => ({ [`k${index}z`]: index, [`q${index}z`]: [index] }));
  const starts = values.map((value) => {
    const start = chunk.used;
    chunk.write(value, strings);
    return start;
  });
  values.forEach((value, index) => assertSame(chunk.read({ at: starts[index] }, strings), value));
});

Deno.test("an object of many keys packs its own, and reads back the same", () => {
  const strings = new StringTable();
  const chunk = new PackedChunk(16);
  const value = Object.fromEntries(Array.from({ length: 100 }, (_, index) => [`key${index}`, index]));
  chunk.write(value, strings);
  assertSame(chunk.read({ at: 0 }, strings), value);
});

Deno.test("an id this process counted packs as its count, in a few bytes; a random UUID in 17", () => {
  const strings = new StringTable();
  for (const [id, bytes] of [[countedUuid(), 5], [crypto.randomUUID(), 17]] as const) {
    const chunk = new PackedChunk(64);
    chunk.write(id, strings);
    assert.ok(chunk.used <= bytes, `${id}: ${chunk.used} bytes`);
    assert.equal(chunk.read({ at: 0 }, strings), id);
  }
});
