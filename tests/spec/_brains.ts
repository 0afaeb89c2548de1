import { Brain, type BrainOptions, type BrainSession } from "../../mod.ts";
import { until } from "../_support/until.ts";
import { scratchDir } from "../_support/scratch.ts";
import type { JournalRecord } from "../../src/journal/mod.ts";
import { serveBrain } from "../../src/host/server/mod.ts";
import { postgresPerFile } from "../_support/postgres.ts";

/**
 * The ways an application holds a Brain: in memory, on a durable Deno KV journal, as the client of a server, and
 * on a durable PostgreSQL journal. Every spec sentence that applies to all of them is checked in each.
 */
export const TRANSPORTS = ["embedded", "durable", "remote", "postgres"] as const;

/** This test file's PostgreSQL: one server for all its tests, a fresh schema for each. */
export const postgres = await postgresPerFile();

/**
 * The Brain options a spec test may set: the same on an embedded Brain and on the server of a remote one
 * (and `allow` also on the remote client, which runs the Environments it hosts under its own allow-list).
 */
export type SpecOptions = Pick<
  BrainOptions,
  "allow" | "maxEmittedBytes" | "maxInputBytes" | "maxModelCalls" | "models"
>;

/** Registers `fn` once per transport, with a fresh Brain built from `options` (the server's, when remote). */
export function specTest(
  title: string,
  fn: (brain: Brain, transport: (typeof TRANSPORTS)[number]) => Promise<void>,
  given: SpecOptions | (() => SpecOptions) = {},
): void {
  for (const transport of TRANSPORTS) {
    Deno.test(`${transport}: ${title}`, async () => {
      const options = typeof given === "function" ? given() : given;
      if (transport === "embedded") {
        await using brain = new Brain(options);
        await fn(brain, transport);
        return;
      }
      if (transport === "durable") {
        await using brain = await Brain.open({ ...options, path: `${scratchDir("spec-kv")}/brain.kv` });
        await fn(brain, transport);
        return;
      }
      if (transport === "postgres") {
        await using brain = await Brain.open({ ...options, journal: await postgres.journal() });
        await fn(brain, transport);
        return;
      }
      const server = await serveBrain({ ...options, serverToken: "spec-operator" });
      try {
        await using brain = new Brain({
          url: server.url,
          serverToken: "spec-operator",
          token: "spec-host",
          ...(options.allow ? { allow: options.allow } : {}),
        });
        await fn(brain, transport);
      } finally {
        await server.shutdown();
      }
    });
  }
}

export { callKinds, callRecords } from "../_support/call_records.ts";
export { hasCode } from "../_support/has_code.ts";

/** Follows the session's records, without polling, until one matches `found`, and returns it. */
export async function untilRecord(
  session: BrainSession,
  found: (record: JournalRecord) => boolean,
): Promise<JournalRecord> {
  const records = await until(session, (records) => records.some(found));
  return records.find(found)!;
}
