import { BrainError } from "../outcome/errors.ts";
import { findNonJson, frozenJson } from "../outcome/json.ts";
import { checkSessionId } from "../util/names.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "./records.ts";
import { allKeys } from "../outcome/known_keys.ts";
import { deepFreeze } from "../util/freeze.ts";
import { errorText } from "../util/error_text.ts";
import { shownValue } from "../util/shown_value.ts";

/** Every record kind, so an append of any other is refused before anything is written. */
const KINDS: ReadonlySet<unknown> = new Set(
  allKeys<Record<RecordBody["kind"], true>>({
    tool_call_started: true,
    tool_event: true,
    tool_result: true,
    tool_returned: true,
    tool_call_finished: true,
    tool_call_late: true,
    user_message: true,
    model_call_started: true,
    model_call_finished: true,
    assistant_delta: true,
    assistant_message: true,
    tool_message: true,
    observation_message: true,
    environment_created: true,
    environment_updated: true,
    environment_deleted: true,
    environment_setup: true,
  }),
);

/**
 * A deep-frozen copy of a session's metadata as every store keeps it (its JSON
 * text, read once); `invalid_argument` unless that is an object nesting at most
 * `MAX_JSON_DEPTH` levels whose `id` is a session id (a name, or a
 * host's session key; a Proxy, a getter that throws, a cycle or a BigInt included).
 */
export function checkedMeta(meta: SessionMeta): SessionMeta {
  let copy: Partial<SessionMeta> | undefined;
  try {
    copy = JSON.parse(JSON.stringify(meta));
  } catch (error) {
    throw new BrainError("invalid_argument", `session metadata is not JSON: ${errorText(error)}`);
  }
  if (typeof copy !== "object" || copy === null || Array.isArray(copy) || typeof copy.id !== "string") {
    throw new BrainError("invalid_argument", "session metadata must be a JSON object with a string id");
  }
  // Only its nesting can still be wrong: deeper than a record may nest, no reader could encode it safely.
  const deep = findNonJson(copy);
  if (deep !== undefined) throw new BrainError("invalid_argument", `session metadata is not JSON Brain keeps: ${deep}`);
  checkSessionId(copy.id);
  return deepFreeze(copy as SessionMeta);
}

/**
 * Throws `invalid_argument` unless `bodies` is an array of objects of known
 * kinds: a kind no reader knows, or a Proxy or getter that throws, is refused
 * here by every store alike, before anything is written.
 */
export function checkBodies(bodies: unknown): asserts bodies is RecordBody[] {
  try {
    if (!Array.isArray(bodies)) throw new BrainError("invalid_argument", "an append takes an array of records");
    for (const body of bodies) {
      const kind = typeof body === "object" && body !== null ? (body as { kind?: unknown }).kind : undefined;
      if (!KINDS.has(kind)) {
        throw new BrainError("invalid_argument", `no record has the kind ${JSON.stringify(String(kind).slice(0, 64))}`);
      }
      if (kind === "tool_call_finished" || kind === "model_call_finished") checkEndedCall(kind, body);
    }
  } catch (error) {
    if (error instanceof BrainError) throw error;
    throw new BrainError("invalid_argument", `a record cannot be read: ${errorText(error)}`);
  }
}

/**
 * Throws `invalid_argument` unless a record ending a call names it by a finite
 * number (a number that is no open call's sequence is the store's `call_finished`).
 */
function checkEndedCall(kind: string, body: { call?: unknown }): void {
  const call = body.call;
  if (typeof call !== "number" || !Number.isFinite(call)) {
    throw new BrainError(
      "invalid_argument",
      `a ${kind} record ends the call started at its sequence, an integer from 1, got ${
        typeof call === "number" ? call : shownValue(call)
      }`,
    );
  }
}

/**
 * The bodies of one commit as records numbered from `start`, each copied and
 * frozen in the one traversal that checks it is JSON (see
 * {@linkcode frozenRecord}). Records that share a value (a result and the
 * finish that repeats its outcome) share one copy.
 */
export function frozenRecords(bodies: RecordBody[], sessionId: string, start: number, at: number): JournalRecord[] {
  if (bodies.length === 1) return [frozenRecord(bodies[0], sessionId, start, at)];
  const copies = spareCopies ?? new SharedCopies();
  spareCopies = undefined;
  try {
    const records = new Array<JournalRecord>(bodies.length);
    for (let index = 0; index < bodies.length; index++) {
      records[index] = frozenRecord(bodies[index], sessionId, start + index, at, copies);
    }
    return records;
  } finally {
    copies.clear();
    spareCopies = copies;
  }
}

/**
 * The body as a committed record, copied and frozen in the one traversal that
 * checks it is JSON. A field set to `undefined` is left out, as a JSON store
 * would; any other non-JSON part throws `invalid_argument`. `copies` remembers
 * the copy of each object field, so records of one commit that share a value
 * share one copy.
 */
export function frozenRecord(
  body: RecordBody,
  sessionId: string,
  sequence: number,
  at: number,
  copies?: SharedCopies,
): JournalRecord {
  const record = new PlainRecord();
  for (const key in body) {
    const value = (body as Record<string, unknown>)[key];
    if (value === undefined || !Object.hasOwn(body, key)) continue;
    const copied = copies && typeof value === "object" && value !== null ? copies.copyOf(value) : frozenJson(value);
    if (copied === undefined) throw notJson(body, key, value);
    if (key === "__proto__") {
      Object.defineProperty(record, key, { value: copied, enumerable: true, writable: true, configurable: true });
    } else record[key] = copied;
  }
  record.sessionId = sessionId;
  record.sequence = sequence;
  // An object first, so V8 keeps the field a pointer rather than a double boxed per record: the records of a commit
  // (and of one millisecond, in a memory journal) then share one number, which the journal keeps for as long as them.
  record.at = POINTER_FIELD;
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

/** What a record's `at` holds for a moment, so the field stays a pointer (see {@linkcode frozenRecord}). */
const POINTER_FIELD = Object.freeze({}) as unknown as number;

/** How many copies one commit remembers: its records share few values, and a lookup scans them all. */
const SHARED_MAX = 8;

/** The copies one commit made of its records' object fields, found by the value copied. */
class SharedCopies {
  #originals: unknown[] = [];
  #copies: unknown[] = [];
  #count = 0;

  /** The copy of `value` the commit already made, or a new one it remembers. */
  copyOf(value: object): unknown {
    for (let index = 0; index < this.#count; index++) if (this.#originals[index] === value) return this.#copies[index];
    const copied = frozenJson(value);
    if (copied !== undefined && this.#count < SHARED_MAX) {
      this.#originals[this.#count] = value;
      this.#copies[this.#count++] = copied;
    }
    return copied;
  }

  /** Forgets every copy, keeping nothing of the commit alive. */
  clear(): void {
    for (let index = 0; index < this.#count; index++) this.#originals[index] = this.#copies[index] = undefined;
    this.#count = 0;
  }
}

/** The copies of the commit being built, kept between commits; one that starts inside another makes its own. */
let spareCopies: SharedCopies | undefined = new SharedCopies();

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
