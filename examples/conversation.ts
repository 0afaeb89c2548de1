/**
 * A full Agentloop session: the user asks, the model calls lookup, the loop
 * puts its result in the conversation, and the model answers. Prints a
 * readable transcript. Run it with `deno run examples/conversation.ts`.
 */
import { Brain } from "../mod.ts";
import type { JournalRecord } from "../src/journal/records.ts";
import type { ModelProvider } from "../src/model/types.ts";
import { ScriptedProvider } from "../src/model/testing.ts";
import { lookup } from "./lookup.ts";

/** A scripted model: call lookup for customer 7, then answer from its result. */
export function scriptedModel(): ScriptedProvider {
  return new ScriptedProvider([
    { toolCalls: [{ id: "call_1", name: "lookup", input: { id: "7" } }] },
    (call) => {
      const result = call.request.messages.findLast((message) => message.role === "tool");
      const record = JSON.parse(result?.content ?? "null") as { value: string } | null;
      return record ? `Customer 7 is ${record.value}.` : "I could not find customer 7.";
    },
  ]);
}

/** Runs one exchange and returns the session's journal. */
export async function main(provider: ModelProvider = scriptedModel()): Promise<JournalRecord[]> {
  const brain = new Brain();
  try {
    const session = await brain.sessions.create({
      tools: [lookup({ prefix: "customer:" })],
      model: { provider, model: "demo-model" },
      agentloop: { system: "You answer questions about customers. Use lookup." },
    });
    await session.send("Who is customer 7?");
    return await session.read();
  } finally {
    await brain.close();
  }
}

/** The conversation part of a journal, one readable line per message or tool step. */
export function transcript(records: JournalRecord[]): string[] {
  const lines: string[] = [];
  for (const record of records) {
    switch (record.kind) {
      case "user_message":
        lines.push(`user       ${record.content}`);
        break;
      case "assistant_message":
        if (record.content) lines.push(`assistant  ${record.content}`);
        for (const call of record.toolCalls) lines.push(`assistant  -> ${call.name}(${JSON.stringify(call.input)})`);
        break;
      case "tool_event":
        lines.push(`tool       call ${record.call} event ${record.event} ${JSON.stringify(record.data)}`);
        break;
      case "tool_message":
        lines.push(`tool       <- ${record.content}`);
        break;
      case "observation_message":
        lines.push(`tool       (later) ${record.content}`);
        break;
      case "model_call_finished":
        if (record.usage) {
          lines.push(
            `           model call ${record.call}: ${record.usage.inputTokens} in, ${record.usage.outputTokens} out`,
          );
        }
        break;
    }
  }
  return lines;
}

if (import.meta.main) {
  for (const line of transcript(await main())) console.log(line);
}
