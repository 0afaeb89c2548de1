import assert from "node:assert/strict";
import { RecordList } from "../../src/journal/record_list.ts";
import type { JournalRecord, RecordBody } from "../../src/journal/records.ts";
import { frozenRecords } from "../../src/journal/frozen_record.ts";

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

/** Bodies of the shapes a commit takes: JSON of every kind, nested, near the sequence, and odd ones. */
function sampleBodies(sequence: number): RecordBody[] {
  return [
    {
      kind: "tool_call_started",
      tool: "t",
      input: { a: [1, -0, 2.5, null, true], b: { "": "é\u{1F600}" } },
      activation: "x",
    },
    { kind: "tool_event", call: sequence - 1, event: "step", data: "x".repeat(300) },
    { kind: "tool_result", call: sequence - 2, outcome: { status: "ok", value: Object.create(null) } },
    JSON.parse('{"kind":"user_message","__proto__":{"a":1},"content":"hi"}'),
    { kind: "tool_returned", call: 9, extra: undefined } as unknown as RecordBody,
    { kind: "tool_returned", call: 1, sequence: 99, at: 3 } as unknown as RecordBody,
  ];
}

Deno.test("a RecordList packs a commit from its bodies into the records frozenRecord builds, or takes them built", () => {
  const packed = new RecordList("s"), built = new RecordList("s");
  const at = 1_700_000_000_000;
  for (let round = 0; round < 1_500; round++) {
    const start = packed.length + 1;
    const bodies = sampleBodies(start);
    // JSON of every kind packs as it is; a field set to undefined or one the record derives is built first.
    assert.ok(packed.pushBodies(bodies.slice(0, 4), at + round));
    for (const odd of bodies.slice(4)) {
      assert.equal(packed.pushBodies([odd], at + round), false);
      packed.push(frozenRecords([odd], "s", packed.length + 1, at + round)[0]);
    }
    for (const record of frozenRecords(bodies, "s", start, at + round)) built.push(record);
  }
  assert.equal(packed.length, built.length);
  const records = packed.slice(0);
  assert.deepEqual(records, built.slice(0));
  assert.deepEqual(
    records.slice(0, 6).map((record) => JSON.stringify(record)),
    [
      ...frozenRecords(sampleBodies(1), "s", 1, at),
    ].map((record) => JSON.stringify(record)),
  );
});

Deno.test("a call's intent, event, result and finish pack as frozenRecord builds them, every optional field present, absent or undefined", () => {
  const outcome = { status: "ok", value: [1, "é"] };
  // Each built in the order the type declares its fields, as Brain builds them.
  const intent = (deadline?: number, toolCallId?: string) => ({
    kind: "tool_call_started",
    tool: "t",
    input: { a: 1 },
    deadline,
    activation: "x",
    toolCallId,
  });
  const bodies = [
    { kind: "tool_call_started", tool: "t", input: null, activation: "x" },
    { kind: "tool_call_started", tool: "t", input: [], deadline: 5, activation: "x" },
    intent(),
    intent(5),
    intent(undefined, "c1"),
    intent(5, "c1"),
    { kind: "tool_event", call: 1, event: "step", data: { n: 1 } },
    { kind: "tool_result", call: 1, outcome },
    { kind: "tool_result", call: 1, outcome, content: "shown" },
    { kind: "tool_result", call: 1, outcome, content: undefined },
    { kind: "tool_call_finished", call: 1, cause: "finish", outcome },
  ] as RecordBody[];
  const list = new RecordList("s");
  for (const body of bodies) {
    const [built] = frozenRecords([body], "s", list.length + 1, 9);
    assert.ok(list.pushBodies([body], 9));
    const packed = list.at(list.length - 1);
    assert.deepEqual(packed, built);
    assert.equal(JSON.stringify(packed), JSON.stringify(built), "the same fields, in the same order");
  }
});

Deno.test("a RecordList packs no record of a commit whose body is not JSON, across a chunk's end too", () => {
  const list = new RecordList("s");
  const fine = (call: number): RecordBody => ({ kind: "tool_returned", call });
  for (let index = 0; index < 4_095; index++) assert.ok(list.pushBodies([fine(index)], 1));
  const deep: Record<string, unknown> = {};
  let inner = deep;
  for (let depth = 0; depth < 300; depth++) inner = (inner.next = {}) as Record<string, unknown>;
  const refused: unknown[] = [
    NaN,
    [1, , 3],
    new Date(0),
    deep,
    { a: 1n },
    { f: () => 1 },
    Object.defineProperty({}, "x", {
      enumerable: true,
      get: () => {
        throw new Error("getter");
      },
    }),
  ];
  const throwingData = Object.defineProperty({ kind: "tool_event", call: 1, event: "e" }, "data", {
    enumerable: true,
    get: () => {
      throw new Error("no");
    },
  }) as unknown as RecordBody;
  for (const data of refused) {
    const bodies = [fine(1), fine(2), { kind: "tool_event", call: 1, event: "e", data } as RecordBody];
    assert.equal(list.pushBodies(bodies, 2), false);
    assert.equal(list.length, 4_095);
  }
  assert.equal(
    list.pushBodies([fine(1), throwingData], 2),
    false,
  );
  assert.equal(list.length, 4_095);
  assert.ok(list.pushBodies([fine(7), fine(8)], 3));
  assert.deepEqual(list.slice(4_094), [
    { kind: "tool_returned", call: 4_094, sessionId: "s", sequence: 4_095, at: 1 },
    { kind: "tool_returned", call: 7, sessionId: "s", sequence: 4_096, at: 3 },
    { kind: "tool_returned", call: 8, sessionId: "s", sequence: 4_097, at: 3 },
  ]);
});

Deno.test("a RecordList keeps a finish's outcome once when its result in the same commit holds the very object, and reads it back by any route", () => {
  const list = new RecordList("s");
  const shared = { status: "ok", value: { items: [1, 2] } };
  const bodies = (call: number, outcome: object, finishOutcome: object): RecordBody[] => [
    { kind: "tool_result", call, outcome } as RecordBody,
    { kind: "tool_call_finished", call, cause: "finish", outcome: finishOutcome } as RecordBody,
  ];
  const sharing = new RecordList("s");
  const equal = { status: "ok", value: { items: [1, 2] } };
  // Filler records put the shared pair at and across stride and chunk starts, so `at` and `slice` both meet it.
  const expected: JournalRecord[] = [];
  for (let pair = 0; pair < 2_100; pair++) {
    const start = list.length + 1;
    assert.ok(list.pushBodies(bodies(start, shared, shared), 7));
    assert.ok(sharing.pushBodies(bodies(start, shared, equal), 7));
    expected.push(...frozenRecords(bodies(start, shared, shared), "s", start, 7));
  }
  const everything = list.slice(0);
  assert.deepEqual(everything, expected);
  assert.deepEqual(
    sharing.slice(0),
    expected,
    "an equal outcome that is another object packs whole and reads the same",
  );
  for (const index of [1, 3, 15, 16, 17, 4095, 4096, 4097, 4199]) {
    assert.deepEqual(list.at(index), expected[index], `at(${index})`);
    assert.deepEqual(list.slice(index, index + 1), [expected[index]], `slice(${index})`);
  }
  // Kept once, it reads back as one object; an equal outcome kept twice reads back as two.
  const outcomeOf = (record: JournalRecord) => (record as { outcome?: unknown }).outcome;
  assert.equal(outcomeOf(everything[1]), outcomeOf(everything[0]));
  const [result, finish] = sharing.slice(0, 2);
  assert.notEqual(outcomeOf(finish), outcomeOf(result));
});
