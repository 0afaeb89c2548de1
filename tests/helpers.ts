import { Brain, type BrainOptions, type BrainSession, type PlacedTool } from "../mod.ts";
import type { JournalRecord } from "../src/journal/records.ts";

/** Runs `fn` with a session of `tools` on a fresh embedded Brain, closing the Brain afterwards. */
export async function withSession(
  tools: PlacedTool[],
  fn: (session: BrainSession, brain: Brain) => Promise<void>,
  options?: BrainOptions,
): Promise<void> {
  const brain = new Brain(options);
  try {
    await fn(await brain.sessions.create({ tools }), brain);
  } finally {
    await brain.close();
  }
}

/** The record kinds of one call, in journal order. */
export async function callKinds(session: BrainSession, call: number): Promise<string[]> {
  return (await callRecords(session, call)).map((record) => record.kind);
}

/** The records of one call, in journal order. */
export async function callRecords(session: BrainSession, call: number): Promise<JournalRecord[]> {
  return (await session.read()).filter((record) =>
    record.sequence === call || ("call" in record && record.call === call)
  );
}

/** Resolves after `ms` milliseconds. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
