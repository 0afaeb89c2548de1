/**
 * The document summarizer: a Tool that calls the session's model with its own,
 * independent messages (`ctx.model`) and publishes a structured result together
 * with model-facing `content`. The conversation sees the content; the journal
 * keeps the structured output. Run it with `deno run examples/summarizer.ts`.
 */
import { Brain, formatRecord, tool } from "../mod.ts";
import type { JournalRecord } from "../src/journal/records.ts";
import type { ModelProvider } from "../src/model/types.ts";
import { ScriptedProvider } from "../src/model/testing.ts";
import { z } from "zod";

const summary = z.object({ title: z.string(), summary: z.string(), keyPoints: z.array(z.string()).max(5) });

/** Summarizes one document with an independent model call. */
export const summarize = tool({
  name: "summarize",
  description: "Summarize a document in a few sentences with its key points.",
  input: z.object({ document: z.string().min(1), title: z.string().default("Untitled") }),
  output: summary.extend({ words: z.number().int() }),
  run: async ({ document, title }, ctx) => {
    const answer = await ctx.model({
      system: "Summarize the document. Answer with JSON: title, summary, keyPoints (at most five).",
      messages: [{ role: "user", content: `Title: ${title}\n\n${document}` }],
      responseFormat: { type: "json_schema", name: "summary", schema: z.toJSONSchema(summary), strict: true },
    });
    const parsed = summary.safeParse(JSON.parse(answer.content));
    if (!parsed.success) {
      return ctx.finish({
        status: "error",
        error: { code: "bad_summary", message: "the model's summary is malformed" },
      });
    }
    const { keyPoints } = parsed.data;
    const words = document.split(/\s+/).filter(Boolean).length;
    return ctx.finish({ ...parsed.data, words }, {
      content: `${parsed.data.summary}\nKey points:\n${keyPoints.map((point) => `- ${point}`).join("\n")}`,
    });
  },
});

/** The document the example summarizes. */
export const document =
  "Brain journals every Tool call. The intent is committed before dispatch, each call is sent at most once, " +
  "and every event, result and finish is committed in order before anyone sees it. Tools can call the " +
  "session's model on their own, and background Tools keep running after a turn completes.";

/** A scripted model for the example: the conversation asks for a summary, the Tool's own call writes it. */
export function scriptedModel(): ScriptedProvider {
  return new ScriptedProvider([
    { toolCalls: [{ id: "call_sum", name: "summarize", input: { document, title: "About Brain" } }] },
    JSON.stringify({
      title: "About Brain",
      summary: "Brain journals each Tool call in order, sends it once, and lets Tools call the model themselves.",
      keyPoints: ["intent before dispatch", "at most once", "ordered commits", "ctx.model", "background Tools"],
    }),
    "Brain journals every Tool call in order and sends each once; Tools may call the model themselves.",
  ]);
}

/** Asks a session to summarize the document and returns its journal. */
export async function main(provider: ModelProvider = scriptedModel()): Promise<JournalRecord[]> {
  const brain = new Brain();
  try {
    const session = await brain.sessions.create({
      tools: [summarize()],
      model: { provider, model: "summarizer-demo" },
      agentloop: { system: "You help users read documents. Use summarize for long texts." },
    });
    await session.send(`Please summarize this:\n\n${document}`);
    return await session.read();
  } finally {
    await brain.close();
  }
}

if (import.meta.main) {
  for (const record of await main()) console.log(formatRecord(record));
}
