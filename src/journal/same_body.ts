import { canonicalJson } from "../outcome/json.ts";
import type { JournalRecord, RecordBody } from "./records.ts";

/** True when `record` holds `body`, field for field, as JSON keeps it. */
export function sameBody(record: JournalRecord | undefined, body: RecordBody): boolean {
  if (record === undefined) return false;
  const { sessionId: _sessionId, sequence: _sequence, at: _at, ...kept } = record;
  return canonicalJson(kept) === canonicalJson(JSON.parse(JSON.stringify(body)));
}
