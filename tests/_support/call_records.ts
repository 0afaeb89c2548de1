import type { BrainSession } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";

/** The records of one call, in journal order. */
export async function callRecords(session: BrainSession, call: number): Promise<JournalRecord[]> {
  return (await session.read()).filter((record) =>
    record.sequence === call || ("call" in record && record.call === call)
  );
}

/** The record kinds of one call, in journal order. */
export async function callKinds(session: BrainSession, call: number): Promise<string[]> {
  return (await callRecords(session, call)).map((record) => record.kind);
}
