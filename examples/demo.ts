/** `deno task demo`: runs the lookup example and prints the session's journal. */
import { formatRecord } from "../mod.ts";
import { main as lookup } from "./lookup.ts";

console.log("lookup: one session, two calls; the journal as committed:\n");
for (const record of await lookup()) console.log(formatRecord(record));
