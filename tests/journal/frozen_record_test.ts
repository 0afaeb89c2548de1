import assert from "node:assert/strict";
import { frozenRecords } from "../../src/journal/frozen_record.ts";
import type { JournalRecord, RecordBody } from "../../src/journal/records.ts";
import { hasCode } from "../_support/has_code.ts";

/** What a JSON store keeps of `body` as record `sequence`: its defined own fields in order, then its place. */
function stored(body: object, sequence: number): string {
  return JSON.stringify({ ...body, sessionId: "s", sequence, at: 7 });
}

function deeplyFrozen(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(deeplyFrozen);
}

function one(body: object): JournalRecord {
  return frozenRecords([body as RecordBody], "s", 1, 7)[0];
}

const ok = { status: "ok", value: { total: [1, 2] } };

/** Bodies of the shapes a call commits, and of shapes next to them: every one is kept exactly as a JSON store would. */
const BODIES: Record<string, object> = {
  "an intent": { kind: "tool_call_started", tool: "t", input: { a: 1 }, activation: "a1" },
  "an intent with a deadline": { kind: "tool_call_started", tool: "t", input: [], deadline: 9, activation: "a1" },
  "an intent with a tool call id": {
    kind: "tool_call_started",
    tool: "t",
    input: {},
    activation: "a1",
    toolCallId: "c1",
  },
  "an intent in another order": { kind: "tool_call_started", input: {}, tool: "t", activation: "a1" },
  "an event": { kind: "tool_event", call: 1, event: "step", data: { n: [null, true] } },
  "an event with an undefined field": { kind: "tool_event", call: 1, event: "step", data: 1, extra: undefined },
  "a result": { kind: "tool_result", call: 1, outcome: ok },
  "a result with content": { kind: "tool_result", call: 1, outcome: ok, content: "text" },
  "an error result": {
    kind: "tool_result",
    call: 1,
    outcome: { status: "error", error: { code: "x", message: "m" } },
  },
  "an ok outcome with more fields": { kind: "tool_result", call: 1, outcome: { status: "ok", value: 1, more: 2 } },
  "an ok outcome in another order": { kind: "tool_result", call: 1, outcome: { value: 1, status: "ok" } },
  "a null-prototype outcome": {
    kind: "tool_result",
    call: 1,
    outcome: Object.assign(Object.create(null), { status: "ok", value: 1 }),
  },
  "a return": { kind: "tool_returned", call: 1 },
  "a finish": { kind: "tool_call_finished", call: 1, cause: "finish", outcome: ok },
  "a late report": { kind: "tool_call_late", call: 1, cause: "return" },
};

for (const [name, body] of Object.entries(BODIES)) {
  Deno.test(`${name} is kept as a JSON store keeps it, deeply frozen and copied`, () => {
    const record = one(body);
    assert.equal(JSON.stringify(record), stored(body, 1));
    assert.ok(deeplyFrozen(record));
    for (const [key, value] of Object.entries(body)) {
      if (typeof value === "object" && value !== null) assert.notEqual((record as Record<string, unknown>)[key], value);
    }
  });
}

Deno.test("a result and the finish that repeats its outcome share one copy of it", () => {
  const [result, finished] = frozenRecords(
    [
      { kind: "tool_result", call: 1, outcome: ok },
      { kind: "tool_call_finished", call: 1, cause: "finish", outcome: ok },
    ] as RecordBody[],
    "s",
    4,
    7,
  );
  assert.equal(
    result.kind === "tool_result" && result.outcome,
    finished.kind === "tool_call_finished" && finished.outcome,
  );
  assert.equal(
    JSON.stringify(finished),
    stored({ kind: "tool_call_finished", call: 1, cause: "finish", outcome: ok }, 5),
  );
});

Deno.test("a body of a call's shape whose fields are not JSON is refused, naming the field", () => {
  class Total {
    status = "ok";
    value = 1;
  }
  const refused: [object, string][] = [
    [{ kind: "tool_result", call: 1, outcome: new Total() }, "$.outcome"],
    [{ kind: "tool_result", call: 1, outcome: { status: "ok", value: () => 1 } }, "$.outcome.value"],
    [{ kind: "tool_result", call: 1, outcome: { status: 1n, value: 1 } }, "$.outcome.status"],
    [{ kind: "tool_event", call: 1, event: "e", data: NaN }, "$.data"],
    [{ kind: "tool_call_started", tool: "t", input: { a: Symbol() }, activation: "a" }, "$.input.a"],
    [{ kind: "tool_call_finished", call: Infinity, cause: "finish", outcome: ok }, "$.call"],
  ];
  for (const [body, path] of refused) {
    assert.throws(() => one(body), hasCode("invalid_argument", new RegExp(RegExp.escape(path))));
  }
});

Deno.test("a field a call's shape has, inherited rather than its own, is not kept", () => {
  const body = Object.assign(Object.create({ outcome: ok }), { kind: "tool_call_finished", call: 1, cause: "finish" });
  assert.equal(JSON.stringify(one(body)), stored({ kind: "tool_call_finished", call: 1, cause: "finish" }, 1));
});

Deno.test("a getter of a call's shape is read once per record", () => {
  let reads = 0;
  const body = {
    kind: "tool_event",
    call: 1,
    event: "e",
    get data() {
      return ++reads;
    },
  };
  assert.equal((one(body) as { data?: unknown }).data, 1);
  assert.equal(reads, 1);
});
