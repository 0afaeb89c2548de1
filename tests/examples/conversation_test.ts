import assert from "node:assert/strict";
import { main as conversation, transcript } from "../../examples/conversation.ts";

Deno.test("examples/conversation.ts: user message, lookup by the model, answer, as a transcript", async () => {
  const lines = transcript(await conversation());
  assert.deepEqual(lines.filter((line) => !line.startsWith(" ")), [
    "user       Who is customer 7?",
    'assistant  -> lookup({"id":"7"})',
    'tool       call 5 event lookup_started {"id":"7"}',
    'tool       <- {"value":"Ada Lovelace"}',
    "assistant  Customer 7 is Ada Lovelace.",
  ]);
  assert.equal(lines.filter((line) => line.includes("model call")).length, 2);
});
