/** `deno task demo`: the lookup example's journal, then a full Agentloop session as a transcript. */
import { formatRecord } from "../mod.ts";
import { main as conversation, transcript } from "./conversation.ts";
import { main as lookup } from "./lookup.ts";

console.log("lookup: one session, two calls; the journal as committed:\n");
for (const record of await lookup()) console.log(formatRecord(record));

console.log("\nconversation: user message -> model calls lookup -> answer:\n");
const records = await conversation();
for (const line of transcript(records)) console.log(line);
console.log("\nthe same session's journal:\n");
for (const record of records) console.log(formatRecord(record));
