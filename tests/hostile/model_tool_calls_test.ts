import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { MAX_TOOL_CALLS_PER_RESULT } from "../../src/model/request.ts";
import { hasCode } from "../_support/has_code.ts";

const noop = tool({
  name: "noop",
  description: "Does nothing.",
  input: z.object({}),
  run: (_input, ctx) => ctx.finish(null),
});

function replyWith(count: number) {
  return { toolCalls: Array.from({ length: count }, () => ({ name: "noop", input: {} })) };
}

Deno.test("a model reply asking for more than MAX_TOOL_CALLS_PER_RESULT tool calls is a protocol_error, and none of them runs", async () => {
  await using brain = new Brain();
  const provider = new ScriptedProvider([replyWith(MAX_TOOL_CALLS_PER_RESULT + 1)]);
  const session = await brain.sessions.create({ tools: [noop()], model: { provider, model: "demo" } });
  await assert.rejects(session.send("go"), hasCode("protocol_error"));
  const records = await session.read();
  assert.equal(records.filter((record) => record.kind === "tool_call_started").length, 0);
  const finished = records.find((record) => record.kind === "model_call_finished");
  assert.ok(finished?.kind === "model_call_finished" && finished.outcome.status === "error");
});

Deno.test("a model reply asking for MAX_TOOL_CALLS_PER_RESULT tool calls runs every one", async () => {
  await using brain = new Brain();
  const provider = new ScriptedProvider([replyWith(MAX_TOOL_CALLS_PER_RESULT), "done"]);
  const session = await brain.sessions.create({ tools: [noop()], model: { provider, model: "demo" } });
  assert.equal((await session.send("go")).content, "done");
  const started = (await session.read()).filter((record) => record.kind === "tool_call_started");
  assert.equal(started.length, MAX_TOOL_CALLS_PER_RESULT);
});
