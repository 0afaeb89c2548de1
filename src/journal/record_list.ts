import type { JournalRecord } from "./records.ts";
import { keyList, keyListOf } from "./key_lists.ts";
import { type Cursor, PackedChunk } from "./packed_chunk.ts";
import { StringTable } from "./string_table.ts";
import { setOwnField } from "../util/own_field.ts";

/** Records per chunk: a power of two, so a record's chunk and place are a shift and a mask. */
const CHUNK_BITS = 12;
const CHUNK = 1 << CHUNK_BITS;

/** How many records and bytes a session's first chunk has room for before it grows: most sessions are short. */
const FIRST_RECORDS = 8;
const FIRST_BYTES = 256;

/** One chunk's records packed, each from `starts[place]`, and the time the others' are counted from. */
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
    const place = this.#length & (CHUNK - 1);
    const chunk = place === 0 ? this.#nextChunk(record.at) : this.#chunks[this.#length >> CHUNK_BITS];
    if (place === chunk.starts.length) {
      const starts = new Int32Array(place * 2);
      starts.set(chunk.starts);
      chunk.starts = starts;
    }
    const { packed } = chunk;
    chunk.starts[place] = packed.used;
    packed.time(record.at, chunk.base);
    const list = keyListOf(record, record.kind);
    const keys = list >= 0 ? keyList(list) : Object.keys(record);
    packed.count(list + 1);
    if (list < 0) packed.write(keys, this.#strings);
    for (let index = 0; index < keys.length; index++) {
      const key = keys[index];
      if (key !== "sessionId" && key !== "sequence" && key !== "at") {
        packed.write((record as unknown as Fields)[key], this.#strings);
      }
    }
    this.#length++;
  }

  /** A new last chunk: the first with room for a few records, a later one for a little more than the one before it held. */
  #nextChunk(base: number): Chunk {
    const before = this.#chunks.at(-1);
    const chunk = before === undefined
      ? { packed: new PackedChunk(FIRST_BYTES), starts: new Int32Array(FIRST_RECORDS), base }
      : { packed: new PackedChunk(Math.ceil(before.packed.used * 1.1)), starts: new Int32Array(CHUNK), base };
    this.#chunks.push(chunk);
    return chunk;
  }

  /** The record at `index` (from 0), which must be below `length`. */
  at(index: number): JournalRecord {
    return this.#record(index);
  }

  /** The records from `start` up to `end` (from 0; `end` excluded, clamped to `length`), as a new array. */
  slice(start: number, end: number = this.#length): JournalRecord[] {
    const last = Math.min(end, this.#length);
    const records: JournalRecord[] = [];
    for (let index = start; index < last; index++) records.push(this.#record(index));
    return records;
  }

  #record(index: number): JournalRecord {
    const { packed, starts, base } = this.#chunks[index >> CHUNK_BITS];
    const cursor: Cursor = { at: starts[index & (CHUNK - 1)] };
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
        : packed.read(cursor, this.#strings);
      setOwnField(record, key, value);
    }
    return Object.freeze(record) as unknown as JournalRecord;
  }
}

type Fields = Record<string, unknown>;
