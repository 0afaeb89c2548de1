import assert from "node:assert/strict";
import { Brain } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import type { ModelMessage, ProviderCall } from "../../src/model/types.ts";
import { ScriptedProvider, type ScriptStep } from "../../src/model/testing.ts";
import { rebuildModelRequest } from "../../src/agentloop/rebuild_request.ts";
import { conversationMessages, isConversationRecord, NO_RESULT } from "../../src/agentloop/messages.ts";
import { LoopView } from "../../src/agentloop/view.ts";
import { lookup } from "../../examples/lookup.ts";
import { ofKind } from "../_support/until.ts";
import { scratchDir } from "../_support/scratch.ts";

/** Turn `turn`'s script: a plain answer, or a lookup call (some reusing one id, some of an unknown tool) and then an answer. */
function turnScript(turn: number): ScriptStep[] {
  if (turn % 3 === 0) return [`answer ${turn}`];
  const id = turn % 5 === 0 ? "reused" : undefined;
  const name = turn % 7 === 0 ? "missing" : "lookup";
  return [{ toolCalls: [{ name, input: { id: `${turn}` }, ...(id ? { id } : {}) }] }, `answer ${turn}`];
}

/** Every Agentloop model call in `records`, rebuilt, against what the provider received, in order. */
function assertRebuilt(records: JournalRecord[], calls: ProviderCall[]): void {
  const started = ofKind(records, "model_call_started");
  assert.equal(started.length, calls.length);
  started.forEach((record, index) => {
    assert.ok("conversation" in record, "an Agentloop request is journaled by reference");
    assert.deepEqual(rebuildModelRequest(records, record.sequence), calls[index].request, `call ${index + 1}`);
    assert.equal(
      JSON.stringify(rebuildModelRequest(records, record.sequence)),
      JSON.stringify(calls[index].request),
    );
  });
}

Deno.test("every request of a 100-turn conversation is rebuilt exactly from the journal, which keeps only what is new", async () => {
  const provider = new ScriptedProvider(Array.from({ length: 100 }, (_, turn) => turnScript(turn + 1)).flat());
  await using brain = new Brain();
  const session = await brain.sessions.create({
    tools: [lookup({ prefix: "customer:" })],
    model: { provider, model: "m" },
  });
  for (let turn = 1; turn <= 100; turn++) {
    assert.equal((await session.send(`question ${turn}`)).content, `answer ${turn}`);
  }
  const records = await session.read();
  assertRebuilt(records, provider.calls);
  const started = ofKind(records, "model_call_started").map((record) =>
    "conversation" in record ? record.conversation : undefined
  );
  assert.deepEqual(started[0]?.tools?.map((tool) => tool.name), ["lookup"], "the first request holds the tools");
  assert.ok(
    started.slice(1).every((link) => link?.tools === undefined && link?.system === undefined),
    "and only the first",
  );
  assert.ok(
    started.slice(1).every((link) => link?.previous !== undefined && link.messages.length <= 3),
    "each later request keeps its new records only",
  );
  const last = provider.calls.at(-1)!.request.messages;
  assert.ok(last.length > 250, "the last request carries the whole conversation");
  assert.ok(
    last.some((message) => message.role === "tool" && message.content.includes("no tool named missing")),
    "a refused call's answer is part of it",
  );
});

Deno.test("a reopened session's Agentloop starts a new chain that still rebuilds exactly", async () => {
  const path = `${scratchDir("rebuild_test")}/${crypto.randomUUID()}.kv`;
  const first = new ScriptedProvider([turnScript(1), turnScript(2)].flat());
  let brain = await Brain.open({ path });
  let id: string;
  try {
    const session = await brain.sessions.create({
      tools: [lookup({ prefix: "c:" })],
      model: { provider: first, model: "m" },
    });
    id = session.id;
    await session.send("one");
    await session.send("two");
  } finally {
    await brain.close();
  }
  const second = new ScriptedProvider([turnScript(3), turnScript(4)].flat());
  brain = await Brain.open({ path });
  try {
    const session = await brain.sessions.get(id, {
      tools: [lookup({ prefix: "c:" })],
      model: { provider: second, model: "m" },
    });
    await session.send("three");
    await session.send("four");
    const records = await session.read();
    const calls = ofKind(records, "model_call_started");
    assert.equal(calls.length, 7);
    const reopened = calls[4];
    assert.ok(
      "conversation" in reopened && reopened.conversation.previous === undefined,
      "a new chain after reopening",
    );
    assertRebuilt(records, [...first.calls, ...second.calls]);
  } finally {
    await brain.close();
  }
});

Deno.test("rebuildModelRequest refuses a sequence that is not a model call, or a chain the records do not hold", async () => {
  const journal = new KvJournal(await Deno.openKv(":memory:"));
  try {
    await journal.createSession({ id: "s", createdAt: 0, tools: [] });
    const records = await journal.append("s", [
      { kind: "user_message", content: "hi" },
      {
        kind: "model_call_started",
        origin: { kind: "agentloop" },
        activation: "a",
        provider: "p",
        model: "m",
        conversation: { previous: 7, messages: [1] },
      },
    ]);
    assert.throws(() => rebuildModelRequest(records, 1), { code: "invalid_argument" });
    assert.throws(() => rebuildModelRequest(records, 2), { code: "invalid_argument" });
    assert.throws(() => rebuildModelRequest(records.slice(1), 2), { code: "invalid_argument" });
  } finally {
    await journal.close();
  }
});

Deno.test("the loop's messages, kept incrementally, match a rebuild whatever order the records arrive in", () => {
  const at = 0;
  const sessionId = "s";
  const records: JournalRecord[] = [
    { kind: "user_message", content: "a", sessionId, sequence: 1, at },
    {
      kind: "assistant_message",
      modelCall: 2,
      content: "",
      toolCalls: [{ id: "x", name: "t", input: 1 }, { id: "y", name: "t", input: 2 }],
      sessionId,
      sequence: 3,
      at,
    },
    { kind: "tool_message", toolCallId: "y", content: "Y", through: 4, sessionId, sequence: 5, at },
    { kind: "observation_message", call: 4, content: "later", through: 6, sessionId, sequence: 7, at },
    {
      kind: "assistant_message",
      modelCall: 8,
      content: "",
      toolCalls: [{ id: "x", name: "t", input: 3 }],
      sessionId,
      sequence: 9,
      at,
    },
    { kind: "tool_message", toolCallId: "x", content: "X2", through: 10, sessionId, sequence: 11, at },
  ];
  const expected = conversationMessages(records.filter(isConversationRecord));
  assert.deepEqual(expected.map((message) => message.content), ["a", "", NO_RESULT, "Y", "later", "", "X2"]);
  for (const order of [[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [2, 0, 4, 1, 5, 3]]) {
    const view = new LoopView();
    const seen: ModelMessage[][] = [];
    for (const index of order) {
      view.add([records[index]]);
      seen.push(view.messages());
    }
    assert.deepEqual(view.messages(), expected, `order ${order}`);
    assert.deepEqual(
      seen[0],
      conversationMessages([records[order[0]]].filter(isConversationRecord)),
      "an early snapshot is kept",
    );
  }
});

Deno.test("a model call refused before it was journaled leaves its new records to the next request, which still rebuilds", async () => {
  const provider = new ScriptedProvider([
    { toolCalls: [{ name: "lookup", input: { id: "1" } }] },
    "second answer",
    { toolCalls: [{ name: "lookup", input: { id: "2" } }] },
  ]);
  await using brain = new Brain({ maxModelCalls: 1 });
  const session = await brain.sessions.create({ tools: [lookup({ prefix: "c:" })], model: { provider, model: "m" } });
  await assert.rejects(session.send("first"), { code: "budget_exceeded" });
  assert.equal((await session.send("second")).content, "second answer");
  await assert.rejects(session.send("third"), { code: "budget_exceeded" });
  const records = await session.read();
  assertRebuilt(records, provider.calls);
  const messages = provider.calls[1].request.messages;
  assert.deepEqual(messages.map((message) => message.role), ["user", "assistant", "tool", "user"]);
});
