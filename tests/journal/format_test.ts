import assert from "node:assert/strict";
import { formatRecord } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";

Deno.test("formatRecord prints sequence, kind and the essentials of each record", () => {
  const base = { sessionId: "s", at: 0 };
  const lines = ([
    { ...base, sequence: 1, kind: "tool_call_started", tool: "lookup", input: { id: "7" }, activation: "a" },
    { ...base, sequence: 2, kind: "tool_event", call: 1, event: "lookup_started", data: { id: "7" } },
    { ...base, sequence: 3, kind: "tool_result", call: 1, outcome: { status: "ok", value: 1 }, content: "one" },
    { ...base, sequence: 4, kind: "tool_call_finished", call: 1, cause: "timeout", outcome: { status: "timeout" } },
    { ...base, sequence: 5, kind: "tool_call_late", call: 1, cause: "finish" },
  ] as JournalRecord[]).map(formatRecord);
  assert.deepEqual(lines, [
    '   1  tool_call_started    lookup({"id":"7"})',
    '   2  tool_event           call 1 lookup_started {"id":"7"}',
    '   3  tool_result          call 1 {"status":"ok","value":1} content "one"',
    '   4  tool_call_finished   call 1 by timeout: {"status":"timeout"}',
    "   5  tool_call_late       call 1 late finish, not applied",
  ]);
});

Deno.test("formatRecord prints environment changes with the environment and the call that made them", () => {
  const base = { sessionId: "s", at: 0 };
  const lines = ([
    { ...base, sequence: 2, kind: "environment_created", call: 1, environment: "api", description: { kind: "http" } },
    { ...base, sequence: 3, kind: "environment_updated", call: 1, environment: "api", description: { kind: "brain" } },
    {
      ...base,
      sequence: 4,
      kind: "environment_setup",
      call: 1,
      environment: "app",
      outcome: { status: "ok", value: null },
    },
    { ...base, sequence: 5, kind: "environment_deleted", call: 1, environment: "api" },
  ] as JournalRecord[]).map(formatRecord);
  assert.deepEqual(lines, [
    '   2  environment_created  api by call 1: {"kind":"http"}',
    '   3  environment_updated  api by call 1: {"kind":"brain"}',
    '   4  environment_setup    app by call 1: {"status":"ok","value":null}',
    "   5  environment_deleted  api by call 1",
  ]);
});
