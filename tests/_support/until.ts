import type { JournalRecord } from "../../src/journal/records.ts";

/** Anything whose committed records can be followed: a session, or {@linkcode journalRecords} of a journal. */
export interface RecordSource {
  records(options: { signal: AbortSignal }): AsyncIterable<JournalRecord>;
}

/** Options of {@linkcode until}. */
export interface UntilOptions {
  /** Named in the failure message. */
  what?: string;
  /** How long to follow before failing; 5 s by default, so a test never hangs. */
  timeoutMs?: number;
}

/**
 * Follows `source`'s records as they commit until `done(recordsSoFar)` holds, and returns them.
 * Nothing polls: it wakes on each commit. Fails after the timeout, naming what it waited for and what it saw.
 */
export async function until(
  source: RecordSource,
  done: (records: JournalRecord[]) => boolean,
  options: string | UntilOptions = {},
): Promise<JournalRecord[]> {
  const { what = "the expected records", timeoutMs = 5_000 } = typeof options === "string"
    ? { what: options }
    : options;
  const stop = new AbortController();
  const guard = setTimeout(() => stop.abort(), timeoutMs);
  const records: JournalRecord[] = [];
  try {
    if (done(records)) return records;
    for await (const record of source.records({ signal: stop.signal })) {
      records.push(record);
      if (done(records)) return records;
    }
  } finally {
    clearTimeout(guard);
    stop.abort();
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}; saw ${records.map((record) => record.kind).join(", ")}`,
  );
}

/** One session's records of a journal, as a {@linkcode RecordSource}. */
export function journalRecords(
  journal: { subscribe(sessionId: string, options: { signal: AbortSignal }): AsyncIterable<JournalRecord> },
  sessionId: string,
): RecordSource {
  return { records: (options) => journal.subscribe(sessionId, options) };
}

/** Records of one kind. */
export type Of<K extends JournalRecord["kind"]> = Extract<JournalRecord, { kind: K }>;

/** Records of `kind` among `records`. */
export function ofKind<K extends JournalRecord["kind"]>(records: JournalRecord[], kind: K): Of<K>[] {
  return records.filter((record): record is Of<K> => record.kind === kind);
}
