import type { BrainSession } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";

/** Records of one kind. */
export type Of<K extends JournalRecord["kind"]> = Extract<JournalRecord, { kind: K }>;

/** Follows the session's journal until `done(records)` holds; fails after 5 s so a test never hangs. */
export async function until(
  session: BrainSession,
  done: (records: JournalRecord[]) => boolean,
  what = "the expected records",
): Promise<JournalRecord[]> {
  const stop = new AbortController();
  const guard = setTimeout(() => stop.abort(), 5_000);
  const records: JournalRecord[] = [];
  try {
    if (done(records)) return records;
    for await (const record of session.records({ signal: stop.signal })) {
      records.push(record);
      if (done(records)) return records;
    }
  } finally {
    clearTimeout(guard);
    stop.abort();
  }
  throw new Error(`timed out waiting for ${what}; saw ${records.map((record) => record.kind).join(", ")}`);
}

/** Records of `kind` among `records`. */
export function ofKind<K extends JournalRecord["kind"]>(records: JournalRecord[], kind: K): Of<K>[] {
  return records.filter((record): record is Of<K> => record.kind === kind);
}

/** A gate a Tool waits on until the test opens it. */
export function gate(): { wait: Promise<void>; open(): void } {
  const { promise, resolve } = Promise.withResolvers<void>();
  return { wait: promise, open: () => resolve() };
}

/** The spec's lookup Tool over the example's in-memory database. */
export { lookup } from "../../examples/lookup.ts";
