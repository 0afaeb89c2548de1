/**
 * A 100-turn Agentloop conversation (each turn: a user message, a model call
 * that asks for a Tool, the Tool call, a model call that answers): the journal
 * bytes each turn adds at turns 1, 10 and 100, printed and named in the
 * benches; and the time of one `send` in a new session (the baseline) against
 * one on a conversation of more than 100 turns. Run with `deno task bench`.
 */
import { z } from "zod";
import { Brain, type BrainSession, type JournalRecord, type ModelProvider, tool } from "../mod.ts";
import { utf8Length } from "../src/util/utf8.ts";

const lookup = tool({
  name: "lookup",
  description: "Looks up a customer record by id and returns its name and plan.",
  input: z.object({ id: z.string().describe("The customer id, such as c-42.") }),
  output: z.object({ name: z.string(), plan: z.string() }),
  run: ({ id }, ctx) => ctx.finish({ name: `customer ${id}`, plan: "pro" }),
});

/** Asks for one lookup after each user message, then answers; no script to run out of. */
const model: ModelProvider = {
  name: "turns",
  complete: ({ model, request }) => {
    const last = request.messages.at(-1)!;
    return Promise.resolve(
      last.role === "user"
        ? {
          content: "",
          toolCalls: [{
            id: `call_${request.messages.length}`,
            name: "lookup",
            input: { id: `c-${request.messages.length}` },
          }],
          stopReason: "tool_calls",
          model,
        }
        : {
          content: `The customer is on the pro plan (${last.content.length} characters).`,
          toolCalls: [],
          stopReason: "stop",
          model,
        },
    );
  },
};

const brain = new Brain({ maxModelCalls: 1_000_000 });
const create = () => brain.sessions.create({ tools: [lookup()], model: { provider: model, model: "m" } });

/** Journal bytes (each record's JSON, as a store keeps it) the `turn`-th send added. */
async function turnBytes(session: BrainSession, turn: number): Promise<number> {
  const before = (await session.read()).length;
  await session.send(`Question ${turn}: which plan is customer c-${turn} on?`);
  const added = await session.read({ from: before + 1 });
  return added.reduce((bytes: number, record: JournalRecord) => bytes + utf8Length(JSON.stringify(record)), 0);
}

const measured = await create();
const bytes: number[] = [];
for (let turn = 1; turn <= 100; turn++) bytes.push(await turnBytes(measured, turn));
const [first, tenth, hundredth] = [bytes[0], bytes[9], bytes[99]];
const perTurn = `journal bytes per turn: turn 1 ${first}, turn 10 ${tenth}, turn 100 ${hundredth} ` +
  `(${(hundredth / first).toFixed(2)}x turn 1)`;
console.log(perTurn);

Deno.bench(
  `new session, one send (two model calls, one Tool call); ${perTurn}`,
  { group: "conversation turn", baseline: true },
  async () => {
    const session = await create();
    await session.send("Which plan is customer c-1 on?");
    await session.end();
  },
);

Deno.bench("send, conversation of more than 100 turns", { group: "conversation turn" }, async () => {
  await measured.send("Which plan is customer c-1 on?");
});
