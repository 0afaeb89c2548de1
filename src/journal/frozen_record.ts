import { BrainError } from "../outcome/errors.ts";
import { findNonJson, frozenJson } from "../outcome/json.ts";
import { checkSessionId } from "../util/names.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "./records.ts";
import { allKeys } from "../outcome/known_keys.ts";
import { deepFreeze } from "../util/freeze.ts";
import { errorText } from "../util/error_text.ts";
import { shownValue } from "../util/shown_value.ts";
import { isObject } from "../util/is_object.ts";
import { hasOwnField, setOwnField } from "../util/own_field.ts";

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
 * `MAX_JSON_DEPTH` levels of the fields of a {@linkcode SessionMeta} (see
 * {@linkcode metaProblem}) whose `id` is a session id (a name, or a host's
 * session key; a Proxy, a getter that throws, a cycle or a BigInt included).
 */
export function checkedMeta(meta: SessionMeta): SessionMeta {
  let copy: unknown;
  try {
    copy = JSON.parse(JSON.stringify(meta));
  } catch (error) {
    throw new BrainError("invalid_argument", `session metadata is not JSON: ${errorText(error)}`);
  }
  const problem = metaProblem(copy);
  if (problem !== undefined) throw new BrainError("invalid_argument", `session metadata ${problem}`);
  // Only its nesting can still be wrong: deeper than a record may nest, no reader could encode it safely.
  const deep = findNonJson(copy);
  if (deep !== undefined) throw new BrainError("invalid_argument", `session metadata is not JSON Brain keeps: ${deep}`);
  checkSessionId((copy as SessionMeta).id);
  return deepFreeze(copy as SessionMeta);
}

/**
 * What makes `meta` (parsed JSON) no session metadata a reader can rely on, or
 * undefined: an object with a string `id`, a number `createdAt`, `tools` a list
 * of objects with a string `name`, and, when present, `model` a provider and a
 * model name and `host` an id and a token hash.
 */
export function metaProblem(meta: unknown): string | undefined {
  if (!isObject(meta)) return "must be a JSON object";
  const { id, createdAt, tools, model, host } = meta;
  if (typeof id !== "string") return "must have a string id";
  if (typeof createdAt !== "number") return "must have a number createdAt";
  if (!Array.isArray(tools) || !tools.every((tool) => isObject(tool) && typeof tool.name === "string")) {
    return "must have tools, a list of objects with a string name";
  }
  if (
    model !== undefined && !(isObject(model) && typeof model.provider === "string" && typeof model.model === "string")
  ) {
    return "must have no model or a provider and model name";
  }
  if (host !== undefined && !(isObject(host) && typeof host.id === "string" && typeof host.tokenHash === "string")) {
    return "must have no host or a host id and tokenHash";
  }
  return undefined;
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
  const literal = literalRecord(body, sessionId, sequence, at, copies);
  if (literal !== undefined) return literal;
  const record = new PlainRecord();
  for (const key in body) {
    const value = (body as Record<string, unknown>)[key];
    if (value === undefined || !hasOwnField(body, key)) continue;
    const copied = field(value, copies);
    if (copied === undefined) throw notJson(body, key, value);
    setOwnField(record, key, copied);
  }
  record.sessionId = sessionId;
  record.sequence = sequence;
  // An object first, so V8 keeps the field a pointer rather than a double boxed per record: a commit's records share one.
  record.at = POINTER_FIELD;
  record.at = at;
  return Object.freeze(record) as JournalRecord;
}

/**
 * The record of a body of one of the shapes a Tool call commits, built from an
 * object literal with the body's fields in its order, or undefined for any
 * other body or a field that is not JSON (which {@linkcode frozenRecord} then
 * builds, or refuses, field by field): a literal of known keys is built
 * faster than fields added one by one (measured on the call path).
 */
function literalRecord(
  body: RecordBody,
  sessionId: string,
  sequence: number,
  at: number,
  copies: SharedCopies | undefined,
): JournalRecord | undefined {
  const shapes = LITERAL_SHAPES[body.kind];
  if (shapes === undefined) return undefined;
  for (let index = 0; index < shapes.length; index++) {
    const { keys, build } = shapes[index];
    if (!hasKeys(body, keys)) continue;
    const record = build(body as unknown as Fields, copies, sessionId, sequence);
    if (record === undefined) return undefined;
    // Built holding an object, so V8 keeps the field a pointer to the number the commit's records share.
    record.at = at;
    return Object.freeze(record) as unknown as JournalRecord;
  }
  return undefined;
}

/** True when `body`'s enumerable keys are `keys`, in that order, and all its own. */
function hasKeys(body: RecordBody, keys: readonly string[]): boolean {
  let index = 0;
  for (const key in body) if (key !== keys[index++]) return false;
  // Inherited keys come after own ones: when the last is its own, they all are.
  return index === keys.length && Object.hasOwn(body, keys[index - 1]);
}

type Fields = Record<string, unknown>;
type Build = (
  body: Fields,
  copies: SharedCopies | undefined,
  sessionId: string,
  sequence: number,
) => Fields | undefined;
/** A body's keys in order, and the literal that builds its record. */
interface Shape {
  keys: readonly string[];
  build: Build;
}

/**
 * A field as {@linkcode frozenRecord} keeps it: a frozen copy made by `copy`,
 * shared within a commit; undefined when not JSON.
 */
function field(
  value: unknown,
  copies: SharedCopies | undefined,
  copy: (value: unknown) => unknown = frozenJson,
): unknown {
  return copies && typeof value === "object" && value !== null ? copies.copyOf(value, copy) : copy(value);
}

/** An outcome as {@linkcode field} keeps it; an `ok` one copied into a literal, for the reason records are. */
function outcomeField(value: unknown, copies: SharedCopies | undefined): unknown {
  return field(value, copies, copiedOutcome);
}

function copiedOutcome(value: unknown): unknown {
  if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    if (hasKeys(value as RecordBody, OK_KEYS)) {
      const status = (value as Fields).status, inner = frozenJson((value as Fields).value);
      if (typeof status === "string" && inner !== undefined) return Object.freeze({ status, value: inner });
    }
  }
  return frozenJson(value);
}

const OK_KEYS = ["status", "value"];

/** The literal shapes by kind: the bodies Brain's calls commit, each with its own literal site. */
const LITERAL_SHAPES: Partial<Record<string, readonly Shape[]>> = {
  tool_call_started: [
    {
      keys: ["kind", "tool", "input", "activation"],
      build: (b, c, sessionId, sequence) => {
        const tool = field(b.tool, c), input = field(b.input, c), activation = field(b.activation, c);
        if (tool === undefined || input === undefined || activation === undefined) return undefined;
        return {
          kind: b.kind,
          tool,
          input,
          activation,
          sessionId,
          sequence,
          at: POINTER_FIELD,
        };
      },
    },
    {
      keys: ["kind", "tool", "input", "deadline", "activation"],
      build: (b, c, sessionId, sequence) => {
        const tool = field(b.tool, c), input = field(b.input, c), deadline = field(b.deadline, c);
        const activation = field(b.activation, c);
        if (tool === undefined || input === undefined || deadline === undefined || activation === undefined) return;
        return {
          kind: b.kind,
          tool,
          input,
          deadline,
          activation,
          sessionId,
          sequence,
          at: POINTER_FIELD,
        };
      },
    },
  ],
  tool_event: [
    {
      keys: ["kind", "call", "event", "data"],
      build: (b, c, sessionId, sequence) => {
        const call = field(b.call, c), event = field(b.event, c), data = field(b.data, c);
        if (call === undefined || event === undefined || data === undefined) return undefined;
        return {
          kind: b.kind,
          call,
          event,
          data,
          sessionId,
          sequence,
          at: POINTER_FIELD,
        };
      },
    },
  ],
  tool_result: [
    {
      keys: ["kind", "call", "outcome"],
      build: (b, c, sessionId, sequence) => {
        const call = field(b.call, c), outcome = outcomeField(b.outcome, c);
        if (call === undefined || outcome === undefined) return undefined;
        return { kind: b.kind, call, outcome, sessionId, sequence, at: POINTER_FIELD };
      },
    },
  ],
  tool_returned: [
    {
      keys: ["kind", "call"],
      build: (b, c, sessionId, sequence) => {
        const call = field(b.call, c);
        if (call === undefined) return undefined;
        return { kind: b.kind, call, sessionId, sequence, at: POINTER_FIELD };
      },
    },
  ],
  tool_call_finished: [
    {
      keys: ["kind", "call", "cause", "outcome"],
      build: (b, c, sessionId, sequence) => {
        const call = field(b.call, c), cause = field(b.cause, c), outcome = outcomeField(b.outcome, c);
        if (call === undefined || cause === undefined || outcome === undefined) return undefined;
        return {
          kind: b.kind,
          call,
          cause,
          outcome,
          sessionId,
          sequence,
          at: POINTER_FIELD,
        };
      },
    },
  ],
};

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

  /** The copy of `value` the commit already made, or a new one (by `copy`) it remembers. */
  copyOf(value: object, copy: (value: object) => unknown = frozenJson): unknown {
    for (let index = 0; index < this.#count; index++) if (this.#originals[index] === value) return this.#copies[index];
    const copied = copy(value);
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

/**
 * A frozen copy of `body`, its defined fields each a frozen copy made in the read
 * that checks it is JSON: what a store that commits after other commits holds,
 * so the record is the body as it was appended, whatever its objects do next.
 * Throws `invalid_argument` for a field that is not JSON.
 */
export function heldRecordBody(body: RecordBody): RecordBody {
  const held: Record<string, unknown> = {};
  try {
    for (const key in body) {
      const value = (body as Record<string, unknown>)[key];
      if (value === undefined || !hasOwnField(body, key)) continue;
      const copy = frozenJson(value);
      if (copy === undefined) throw notJson(body, key, value);
      setOwnField(held, key, copy);
    }
  } catch (error) {
    if (error instanceof BrainError) throw error;
    throw new BrainError("invalid_argument", `a record cannot be read: ${errorText(error)}`);
  }
  return Object.freeze(held) as unknown as RecordBody;
}

function notJson(body: RecordBody, key: string, value: unknown): BrainError {
  return new BrainError("invalid_argument", `a ${body.kind} record is not JSON: ${findNonJson(value, `$.${key}`)}`);
}
