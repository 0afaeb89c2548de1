import type { BrainSession } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { until } from "./until.ts";

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

/** Waits, without polling, until call `call` of `session` has committed `tool_returned`; returns the records so far. */
export function untilReturned(session: BrainSession, call: number): Promise<JournalRecord[]> {
  return until(
    session,
    (records) => records.some((record) => record.kind === "tool_returned" && record.call === call),
    `call ${call} to return`,
  );
}
