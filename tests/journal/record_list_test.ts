import assert from "node:assert/strict";
import { RecordList } from "../../src/journal/record_list.ts";
import type { JournalRecord } from "../../src/journal/records.ts";

Deno.test("a RecordList answers at and slice as one array would, across its chunks", () => {
  const list = new RecordList("s");
  const array: JournalRecord[] = [];
  for (let sequence = 1; sequence <= 10_000; sequence++) {
    const record = sequence % 3 === 0
      ? { kind: "tool_event", call: 1, event: "step", data: { sequence }, sessionId: "s", sequence, at: sequence * 7 }
      : { kind: "tool_returned", call: sequence, sessionId: "s", sequence, at: 1.5 };
    list.push(record as JournalRecord);
    array.push(record as JournalRecord);
  }
  assert.equal(list.length, 10_000);
  for (let index = 0; index < 10_000; index += index < 100 || (index > 4000 && index < 4200) ? 1 : 97) {
    assert.deepEqual(list.at(index), array[index], `at(${index})`);
  }
  for (
    const [start, end] of [[0, 10], [5, 21], [17, 18], [4090, 4100], [4095, 8193], [0, 10_000], [9_990, 20_000], [
      10_000,
      undefined,
    ]]
  ) {
    assert.deepEqual(list.slice(start!, end), array.slice(start, end), `slice(${start}, ${end})`);
  }
});

Deno.test("a RecordList gives back each record frozen, with its keys in their order, odd ones included", () => {
  const list = new RecordList("s");
  const odd = JSON.parse(
    '{"kind":"user_message","sessionId":"s","__proto__":{"polluted":true},"content":"hi","sequence":1,"at":5}',
  );
  list.push(odd);
  list.push({ kind: "user_message", content: "second", sessionId: "s", sequence: 2, at: 6 } as JournalRecord);
  const [first, second] = list.slice(0);
  assert.ok(Object.isFrozen(first) && Object.isFrozen(second));
  assert.equal(Object.getPrototypeOf(first), Object.prototype);
  assert.deepEqual(Object.keys(first), ["kind", "sessionId", "__proto__", "content", "sequence", "at"]);
  assert.deepEqual(Object.getOwnPropertyDescriptor(first, "__proto__")?.value, { polluted: true });
  assert.equal(JSON.stringify(first), JSON.stringify(odd));
  assert.deepEqual(second, { kind: "user_message", content: "second", sessionId: "s", sequence: 2, at: 6 });
});

Deno.test("a RecordList keeps only a record's own keys when Object.prototype has an enumerable one", () => {
  const list = new RecordList("s");
  list.push({ kind: "tool_returned", call: 1, sessionId: "s", sequence: 1, at: 1 } as JournalRecord);
  Object.defineProperty(Object.prototype, "injected", { value: 1, enumerable: true, configurable: true });
  try {
    list.push({ kind: "tool_returned", call: 2, sessionId: "s", sequence: 2, at: 2 } as JournalRecord);
  } finally {
    delete (Object.prototype as Record<string, unknown>).injected;
  }
  assert.deepEqual(list.slice(0).map((record) => Object.keys(record)), [
    ["kind", "call", "sessionId", "sequence", "at"],
    ["kind", "call", "sessionId", "sequence", "at"],
  ]);
  assert.equal((list.at(1) as { call?: number }).call, 2);
});

Deno.test("a RecordList gives back a record's numbers exactly, near its sequence or not", () => {
  const list = new RecordList("s");
  const calls = [1, 2, 3, 4, 5, 0, -0, -1, 0.5, 2 ** 53, 1e300, -1e300];
  const records = calls.map((call, index) =>
    ({ kind: "tool_returned", call, sessionId: "s", sequence: index + 1, at: 9 }) as JournalRecord
  );
  for (const record of records) list.push(record);
  list.slice(0).forEach((record, index) => {
    assert.ok(Object.is((record as { call?: number }).call, calls[index]), `call ${calls[index]}`);
  });
});

Deno.test("a RecordList packs objects without converting them to numbers, so a throwing valueOf is never called", () => {
  const list = new RecordList("s");
  const valueOf = Object.prototype.valueOf;
  Object.prototype.valueOf = () => {
    throw new Error("valueOf called");
  };
  try {
    list.push(
      { kind: "tool_event", call: 1, event: "e", data: { a: 1 }, sessionId: "s", sequence: 1, at: 1 } as JournalRecord,
    );
  } finally {
    Object.prototype.valueOf = valueOf;
  }
  assert.deepEqual((list.at(0) as { data?: unknown }).data, { a: 1 });
});
