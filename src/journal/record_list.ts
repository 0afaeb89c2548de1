import type { JournalRecord, RecordBody } from "./records.ts";
import { keyList, keyListNumber, keyListOf, keyListValues } from "./key_lists.ts";
import { callBodyValues } from "./call_body_values.ts";
import { type Cursor, PackedChunk } from "./packed_chunk.ts";
import { StringTable } from "./string_table.ts";
import { setOwnField } from "../util/own_field.ts";

/** Records per chunk: a power of two, so a record's chunk and place are a shift and a mask. */
const CHUNK_BITS = 12;
const CHUNK = 1 << CHUNK_BITS;

/** Where every this many records start is kept: to read another, its chunk skips from the one before. */
const STRIDE_BITS = 4;
const STRIDE = 1 << STRIDE_BITS;

/** How many bytes a session's first chunk has room for before it grows: most sessions are short. */
const FIRST_BYTES = 256;

/** One chunk's records packed, every `STRIDE`th from `starts[place / STRIDE]`, and the time theirs count from. */
interface Chunk {
  packed: PackedChunk;
  starts: Int32Array;
  base: number;
}

/**
 * A session's committed records in sequence order (the record at index `i` has
 * sequence `i + 1`), kept packed in chunks of a fixed size and built again,
 * deep-frozen, when read. A memory journal keeps every record for the session's
 * life, and on these machines each byte kept costs its first touch (a page
 * fault the host serves) and each object a mark in every full GC: a packed call
 * keeps about a fifth of the bytes its record objects would, and no objects.
 */
export class RecordList {
  #sessionId: string;
  #strings = new StringTable();
  #chunks: Chunk[] = [];
  #length = 0;
  /** The outcome the body just packed held, read as it was packed: the next body of its commit may share it. */
  #outcome: unknown;

  /** An empty list of `sessionId`'s records. */
  constructor(sessionId: string) {
    this.#sessionId = sessionId;
  }

  /** How many records the list holds. */
  get length(): number {
    return this.#length;
  }

  /** Adds the next record. */
  push(record: JournalRecord): void {
    const chunk = this.#chunkFor(record.at);
    const { packed } = chunk;
    packed.time(record.at, chunk.base);
    const list = keyListOf(record, record.kind);
    const keys = list >= 0 ? keyList(list) : Object.keys(record);
    packed.count(list + 1);
    if (list < 0) packed.write(keys, this.#strings);
    for (let index = 0; index < keys.length; index++) {
      const key = keys[index];
      if (!DERIVED.has(key)) packed.field((record as unknown as Fields)[key], this.#length + 1, this.#strings);
    }
    this.#length++;
  }

  /**
   * Adds the records of one commit from their bodies, committed at `at`: each
   * the record `frozenRecord` would build, packed in the one traversal that
   * checks it is JSON. A call's intent, event, result and finish are read by
   * the fields their type declares (see `callBodyValues`), any other body by
   * its own keys. False, having added none, when a body is not one this packs
   * (a field that is not plain JSON or is undefined, a key the record derives,
   * too many keys): {@linkcode push} then takes the records built.
   */
  pushBodies(bodies: readonly RecordBody[], at: number): boolean {
    const length = this.#length, chunks = this.#chunks.length;
    const last = this.#chunks[chunks - 1];
    const used = last?.packed.used ?? 0, longs = last?.packed.longs ?? 0;
    let packed = true;
    try {
      for (let index = 0; packed && index < bodies.length; index++) packed = this.#pushBody(bodies[index], at);
    } catch {
      packed = false;
    }
    this.#outcome = undefined;
    if (!packed) {
      this.#length = length;
      this.#chunks.length = chunks;
      last?.packed.truncate(used, longs);
    }
    return packed;
  }

  /**
   * Packs `body`; its outcome, when it is the very object the commit's body
   * before held as that was packed (a result's, for its finish), as that one.
   */
  #pushBody(body: RecordBody, at: number): boolean {
    const shared = this.#outcome;
    this.#outcome = undefined;
    const callBody = callBodyValues(body, BODY_VALUES);
    const bodyList = callBody >= 0 ? callBody : keyListValues(body, BODY_VALUES, body.kind);
    const list = bodyList >= 0 ? recordListOf(bodyList) : -1;
    if (list < 0) return false;
    const chunk = this.#chunkFor(at);
    const { packed } = chunk;
    packed.time(at, chunk.base);
    packed.count(list + 1);
    const keys = keyList(bodyList), sequence = this.#length + 1;
    for (let index = 0; index < keys.length; index++) {
      const value = BODY_VALUES[index];
      if (value === undefined) return false;
      if (keys[index] === SHARED && typeof value === "object") {
        this.#outcome = value;
        if (value === shared) {
          packed.same();
          continue;
        }
      }
      if (!packed.field(value, sequence, this.#strings)) return false;
    }
    this.#length++;
    return true;
  }

  /** The chunk the next record goes to, its start kept when it starts a stride. */
  #chunkFor(at: number): Chunk {
    const place = this.#length & (CHUNK - 1);
    const chunk = place === 0 ? this.#nextChunk(at) : this.#chunks[this.#length >> CHUNK_BITS];
    if ((place & (STRIDE - 1)) === 0) {
      const stride = place >> STRIDE_BITS;
      if (stride === chunk.starts.length) {
        const starts = new Int32Array(stride * 2);
        starts.set(chunk.starts);
        chunk.starts = starts;
      }
      chunk.starts[stride] = chunk.packed.used;
    }
    return chunk;
  }

  /** A new last chunk: the first with room for a few records, a later one for a little more than the one before it held. */
  #nextChunk(base: number): Chunk {
    const before = this.#chunks.at(-1);
    const chunk = before === undefined
      ? { packed: new PackedChunk(FIRST_BYTES), starts: new Int32Array(1), base }
      : { packed: new PackedChunk(Math.ceil(before.packed.used * 1.1)), starts: new Int32Array(CHUNK / STRIDE), base };
    this.#chunks.push(chunk);
    return chunk;
  }

  /** The record at `index` (from 0), which must be below `length`. */
  at(index: number): JournalRecord {
    return this.#read(index, this.#cursorAt(index));
  }

  /** The records from `start` up to `end` (from 0; `end` excluded, clamped to `length`), as a new array. */
  slice(start: number, end: number = this.#length): JournalRecord[] {
    const last = Math.min(end, this.#length);
    const records: JournalRecord[] = [];
    if (start >= last) return records;
    let cursor = this.#cursorAt(start);
    for (let index = start; index < last; index++) {
      if ((index & (CHUNK - 1)) === 0) cursor = { at: 0 };
      records.push(this.#read(index, cursor, records[records.length - 1]));
    }
    return records;
  }

  /** Where the record at `index` starts: after the records before it since the last start its chunk keeps. */
  #cursorAt(index: number): Cursor {
    const { packed, starts } = this.#chunks[index >> CHUNK_BITS];
    const place = index & (CHUNK - 1);
    const cursor: Cursor = { at: starts[place >> STRIDE_BITS] };
    for (let skipped = place & ~(STRIDE - 1); skipped < place; skipped++) this.#skip(packed, cursor);
    return cursor;
  }

  /** Moves `cursor` past one record of `packed`. */
  #skip(packed: PackedChunk, cursor: Cursor): void {
    packed.skip(cursor);
    const list = packed.readCount(cursor) - 1;
    const keys = list >= 0 ? keyList(list) : packed.read(cursor, this.#strings) as string[];
    for (let place = 0; place < keys.length; place++) if (!DERIVED.has(keys[place])) packed.skip(cursor);
  }

  /**
   * The record at `index`, read from `cursor` in its chunk (which it moves past
   * it); `before` is the record at `index - 1` when the caller has it.
   */
  #read(index: number, cursor: Cursor, before?: JournalRecord): JournalRecord {
    const { packed, base } = this.#chunks[index >> CHUNK_BITS];
    const at = packed.readTime(cursor, base);
    const list = packed.readCount(cursor) - 1;
    const keys = list >= 0 ? keyList(list) : packed.read(cursor, this.#strings) as string[];
    const record: Fields = {};
    for (let place = 0; place < keys.length; place++) {
      const key = keys[place];
      const value = key === "sessionId"
        ? this.#sessionId
        : key === "sequence"
        ? index + 1
        : key === "at"
        ? at
        : packed.readSame(cursor)
        ? ((before ?? this.at(index - 1)) as unknown as Fields)[key]
        : packed.readField(cursor, index + 1, this.#strings);
      setOwnField(record, key, value);
    }
    return Object.freeze(record) as unknown as JournalRecord;
  }
}

/** The fields a record is not packed with, in the order a record built from a body ends with them: the list knows them. */
const DERIVED_KEYS = ["sessionId", "sequence", "at"] as const;
const DERIVED: ReadonlySet<string> = new Set(DERIVED_KEYS);

/** The field a record may share with the record before it in its commit: a finish's outcome, its result's. */
const SHARED = "outcome";

/** The values of the body being packed, in its key list's order: a commit packs one body at a time. */
const BODY_VALUES: unknown[] = [];

/** The list of the records built from bodies of each key list, by the body's list: -1 where there is none. */
const RECORD_LISTS: number[] = [];

/** The key list of a record built from a body whose keys are list `bodyList`: theirs, then the derived ones. */
function recordListOf(bodyList: number): number {
  let list = RECORD_LISTS[bodyList];
  if (list === undefined) {
    const keys = keyList(bodyList);
    list = keys.some((key) => DERIVED.has(key)) ? -1 : keyListNumber([...keys, ...DERIVED_KEYS]);
    RECORD_LISTS[bodyList] = list;
  }
  return list;
}

type Fields = Record<string, unknown>;
