/**
 * Journal stores for Brain: the durable, ordered record of every session. Pass one
 * to `new Brain({ journal })`, or let `Brain.open({ path })` open a Deno KV file.
 *
 * @example
 * ```ts
 * import { Brain } from "@aexhq/brain";
 * import { MemoryJournal } from "@aexhq/brain/journal";
 *
 * const brain = new Brain({ journal: new MemoryJournal() });
 * await brain.close();
 * ```
 *
 * @module
 */
export type { Journal, ReadOptions, SubscribeOptions } from "./journal.ts";
export type * from "./records.ts";
export type { AcquireOptions, AppendOptions, Lease } from "./lease.ts";
export { MemoryJournal } from "./memory.ts";
export type { JsonValue } from "../outcome/json.ts";
export type { Outcome, OutcomeError, OutcomeStatus } from "../outcome/outcome.ts";
export type * from "../model/types.ts";
export { KvJournal, MAX_RECORDS_PER_APPEND } from "./kv.ts";
