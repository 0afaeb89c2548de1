import assert from "node:assert/strict";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { document, main as summarizer, scriptedModel } from "../../examples/summarizer.ts";
import { ofKind } from "../_support/until.ts";

Deno.test("examples/summarizer.ts: the Tool calls the model independently and the loop presents its content", async () => {
  const provider = scriptedModel();
  const records = await summarizer(provider);
  const [loopCall, toolCall, answerCall] = provider.calls;
  assert.equal(loopCall.request.tools[0].name, "summarize");
  assert.equal(toolCall.request.messages.length, 1, "the Tool's messages are its own, not the conversation");
  assert.equal(toolCall.request.messages[0].content, `Title: About Brain\n\n${document}`);
  assert.match(toolCall.request.system, /^Summarize the document/);
  assert.deepEqual(toolCall.request.tools, []);
  assert.equal(toolCall.request.responseFormat?.type, "json_schema");
  const [, started] = ofKind(records, "model_call_started");
  const [summarizeCall] = ofKind(records, "tool_call_started");
  assert.deepEqual(started.origin, { kind: "tool", tool: "summarize", call: summarizeCall.sequence });
  const [result] = ofKind(records, "tool_result");
  assert.equal(result.outcome.status, "ok");
  const value = (result.outcome as unknown as { value: { keyPoints: string[]; words: number } }).value;
  assert.equal(value.keyPoints.length, 5);
  assert.equal(value.words, document.split(/\s+/).length);
  assert.match(result.content!, /^Brain journals each Tool call.*\nKey points:\n- intent before dispatch/s);
  const [answer] = ofKind(records, "tool_message");
  assert.equal(answer.content, result.content, "the loop chose the content, not the structured output");
  assert.deepEqual(answerCall.request.messages.at(-1), {
    role: "tool",
    toolCallId: "call_sum",
    content: result.content,
  });
  assert.equal(ofKind(records, "assistant_message").length, 2, "the Tool's model call is not a conversation turn");
});

Deno.test("examples/summarizer.ts: a malformed model summary becomes an error result the model hears about", async () => {
  const provider = new ScriptedProvider([
    { toolCalls: [{ id: "s", name: "summarize", input: { document: "short text" } }] },
    JSON.stringify({ title: "x" }),
    "Sorry, the summary failed.",
  ]);
  const records = await summarizer(provider);
  const [finished] = ofKind(records, "tool_call_finished");
  assert.equal(finished.outcome.status, "error");
  assert.equal(ofKind(records, "tool_message")[0].content, "Error (bad_summary): the model's summary is malformed");
});
