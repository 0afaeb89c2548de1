/**
 * The journal stores a Brain keeps sessions in: {@linkcode MemoryJournal} (one
 * process), {@linkcode KvJournal} (a Deno KV file: processes on one machine)
 * and {@linkcode PostgresJournal} (PostgreSQL: a cluster of Brain servers).
 * Every store gives sessions one owner at a time through fenced leases.
 *
 * @example
 * ```ts
 * import { MemoryJournal } from "@aexhq/brain/journal";
 * const journal = new MemoryJournal();
 * await journal.createSession({ id: "s1", createdAt: Date.now(), tools: [] });
 * const lease = await journal.acquire("s1", { owner: "node-a", ttlMs: 10_000 });
 * const [record] = await journal.append("s1", [{ kind: "tool_returned", call: 1 }], { lease });
 * console.log(record.sequence); // 1
 * ```
 *
 * @module
 */
export type { Journal, ReadOptions, SubscribeOptions } from "./journal.ts";
export type * from "./records.ts";
export type { AcquireOptions, AppendOptions, Lease, StoredLease } from "./lease.ts";
export type { NodeBeat } from "./nodes.ts";
export type { SessionCreateOptions } from "./host_sessions.ts";
export { MemoryJournal } from "./memory.ts";
export type { JsonValue } from "../outcome/json.ts";
export type { Outcome, OutcomeError, OutcomeStatus } from "../outcome/outcome.ts";
export type * from "../model/types.ts";
export { KvJournal, MAX_RECORDS_PER_APPEND } from "./kv.ts";
export { PostgresJournal, type PostgresJournalOptions } from "./postgres.ts";
