import assert from "node:assert/strict";
import { RecordList } from "../../src/journal/record_list.ts";
import type { JournalRecord } from "../../src/journal/records.ts";

Deno.test("a RecordList answers at and slice as one array would, across its chunks", () => {
  const list = new RecordList();
  const array: JournalRecord[] = [];
  for (let sequence = 1; sequence <= 10_000; sequence++) {
    const record = { kind: "tool_returned", call: 1, sessionId: "s", sequence, at: 0 } as JournalRecord;
    list.push(record);
    array.push(record);
  }
  assert.equal(list.length, 10_000);
  for (const index of [0, 4095, 4096, 8191, 8192, 9999]) assert.equal(list.at(index), array[index]);
  for (const [start, end] of [[0, 10], [4090, 4100], [4095, 8193], [0, 10_000], [9_990, 20_000], [10_000, undefined]]) {
    assert.deepEqual(list.slice(start!, end), array.slice(start, end), `slice(${start}, ${end})`);
  }
});
