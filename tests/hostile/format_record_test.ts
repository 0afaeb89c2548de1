import assert from "node:assert/strict";
import { formatRecord, isFailure } from "../../mod.ts";
import { hasCode } from "../_support/has_code.ts";
import { trap } from "../_support/trap.ts";

const event = { kind: "tool_event", sequence: 1, sessionId: "s", at: 1, call: 1, event: "e" };

Deno.test("hostile formatRecord and isFailure: values that are no record or outcome are invalid_argument, never a TypeError", () => {
  const cycle: Record<string, unknown> = { ...event };
  cycle.data = cycle;
  let deep: unknown = 1;
  for (let level = 0; level < 100_000; level++) deep = [deep];
  const records: [string, unknown][] = [
    ["a cycle", cycle],
    ["a BigInt", { ...event, data: 1n }],
    ["100 000 levels", { ...event, data: deep }],
    ["a Proxy", trap()],
    ["a Proxy field", { ...event, data: trap() }],
    ["a model call without origin", { kind: "model_call_started", sequence: 1, sessionId: "s", at: 1, origin: null }],
    ["a deadline that is no time", {
      kind: "tool_call_started",
      sequence: 1,
      sessionId: "s",
      at: 1,
      call: 1,
      tool: "t",
      input: {},
      deadline: 1e300,
    }],
  ];
  for (const [what, record] of records) {
    assert.throws(() => formatRecord(record as never), hasCode("invalid_argument"), what);
  }
  assert.match(formatRecord({ ...event, data: { a: 1 } } as never), /tool_event/);
  assert.throws(() => isFailure(trap() as never), hasCode("invalid_argument"), "isFailure of a Proxy");
});
