import { Brain, BrainError, type BrainOptions, type BrainSession } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/mod.ts";
import { serveBrain } from "../../src/host/server/mod.ts";

/** The two ways an application holds a Brain; every spec sentence that applies to both is checked in both. */
export const TRANSPORTS = ["embedded", "remote"] as const;

/** The Brain options a spec test may set: the same on an embedded Brain and on the server of a remote one. */
export type SpecOptions = Pick<BrainOptions, "maxEmittedBytes" | "maxInputBytes" | "maxModelCalls" | "models">;

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
      const server = await serveBrain({ ...options, serverToken: "spec-operator" });
      try {
        await using brain = new Brain({ url: server.url, serverToken: "spec-operator", token: "spec-host" });
        await fn(brain, transport);
      } finally {
        await server.shutdown();
      }
    });
  }
}

/** Follows the session's records until `found` matches one, and returns it. */
export async function until(
  session: BrainSession,
  found: (record: JournalRecord) => boolean,
): Promise<JournalRecord> {
  const controller = new AbortController();
  for await (const record of session.records({ signal: controller.signal })) {
    if (found(record)) {
      controller.abort();
      return record;
    }
  }
  throw new Error("the session ended before the record appeared");
}

/** The records of one call, in journal order. */
export async function callRecords(session: BrainSession, call: number): Promise<JournalRecord[]> {
  return (await session.read()).filter((record) =>
    record.sequence === call || ("call" in record && record.call === call)
  );
}

/** The kinds of one call's records, in journal order. */
export async function callKinds(session: BrainSession, call: number): Promise<string[]> {
  return (await callRecords(session, call)).map((record) => record.kind);
}

/** A predicate for `assert.rejects`: a BrainError with `code`. */
export function hasCode(code: string): (error: unknown) => boolean {
  return (error) => error instanceof BrainError && error.code === code;
}
