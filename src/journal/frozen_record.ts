import { BrainError } from "../outcome/errors.ts";
import { findNonJson, frozenJson } from "../outcome/json.ts";
import type { JournalRecord, RecordBody } from "./records.ts";

/**
 * The body as a committed record, copied and frozen in the one traversal that
 * checks it is JSON. A field set to `undefined` is left out, as a JSON store
 * would; any other non-JSON part throws `invalid_argument`. `copies` remembers
 * the copy of each object field, so records of one commit that share a value (a
 * result and the finish that repeats its outcome) share one copy.
 */
export function frozenRecord(
  body: RecordBody,
  sessionId: string,
  sequence: number,
  at: number,
  copies?: Map<unknown, unknown>,
): JournalRecord {
  const record: Record<string, unknown> = {};
  for (const key in body) {
    const value = (body as Record<string, unknown>)[key];
    if (value === undefined || !Object.hasOwn(body, key)) continue;
    const copied = copies?.get(value) ?? frozenJson(value);
    if (copied === undefined) throw notJson(body, key, value);
    if (copies && typeof value === "object") copies.set(value, copied);
    if (key === "__proto__") {
      Object.defineProperty(record, key, { value: copied, enumerable: true, writable: true, configurable: true });
    } else record[key] = copied;
  }
  record.sessionId = sessionId;
  record.sequence = sequence;
  record.at = at;
  return Object.freeze(record) as JournalRecord;
}

/** Throws `invalid_argument` unless every defined field of `body` is plain JSON. */
export function checkRecordBody(body: RecordBody): void {
  for (const key in body) {
    const value = (body as Record<string, unknown>)[key];
    if (value === undefined || !Object.hasOwn(body, key)) continue;
    if (findNonJson(value) !== undefined) throw notJson(body, key, value);
  }
}

function notJson(body: RecordBody, key: string, value: unknown): BrainError {
  return new BrainError("invalid_argument", `a ${body.kind} record is not JSON: ${findNonJson(value, `$.${key}`)}`);
}
