import type { JournalRecord, RecordBody } from "./records.ts";

/** True when `record` holds `body`, field for field, as JSON keeps it. */
export function sameBody(record: JournalRecord | undefined, body: RecordBody): boolean {
  if (record === undefined) return false;
  const { sessionId: _sessionId, sequence: _sequence, at: _at, ...kept } = record;
  return canonical(kept) === canonical(JSON.parse(JSON.stringify(body)));
}

/** JSON text of `value` with every object's keys in order. */
function canonical(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, inner) =>
      inner !== null && typeof inner === "object" && !Array.isArray(inner)
        ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0))
        : inner,
  );
}
