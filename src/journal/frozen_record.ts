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
  const record = new PlainRecord();
  for (const key in body) {
    const value = (body as Record<string, unknown>)[key];
    if (value === undefined || !Object.hasOwn(body, key)) continue;
    const copied = copies && typeof value === "object" ? sharedCopy(copies, value) : frozenJson(value);
    if (copied === undefined) throw notJson(body, key, value);
    if (key === "__proto__") {
      Object.defineProperty(record, key, { value: copied, enumerable: true, writable: true, configurable: true });
    } else record[key] = copied;
  }
  record.sessionId = sessionId;
  record.sequence = sequence;
  record.at = at;
  return Object.freeze(record) as JournalRecord;
}

/**
 * Builds records: a constructor rather than `{}`, so V8 keeps a record's fields
 * in the object itself (a literal holds four and puts the rest in a second
 * allocation, which every record would then keep for the journal's lifetime).
 * Its prototype is Object's: a record is a plain object.
 */
const PlainRecord = function () {} as unknown as new () => Record<string, unknown>;
PlainRecord.prototype = Object.prototype;

/** The copy of `value` the commit already made, or a new one it remembers. */
function sharedCopy(copies: Map<unknown, unknown>, value: unknown): unknown {
  let copied = copies.get(value);
  if (copied === undefined) {
    copied = frozenJson(value);
    if (copied !== undefined) copies.set(value, copied);
  }
  return copied;
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
