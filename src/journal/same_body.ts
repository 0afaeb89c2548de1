import { canonicalJson } from "../outcome/json.ts";
import type { JournalRecord, RecordBody } from "./records.ts";

/** True when `record` holds `body`, field for field, as JSON keeps it. */
export function sameBody(record: JournalRecord | undefined, body: RecordBody): boolean {
  if (record === undefined) return false;
  return canonicalJson(bodyOf(record)) === canonicalJson(JSON.parse(JSON.stringify(body)));
}

/** The body `record` holds: its fields but the three its journal adds (its values are the record's own). */
export function bodyOf(record: JournalRecord): RecordBody {
  const { sessionId: _sessionId, sequence: _sequence, at: _at, ...body } = record;
  return body as RecordBody;
}
