import type { JournalRecord } from "./records.ts";
import { plainRecord } from "./frozen_record.ts";

/** Records per chunk: a power of two, so a record's chunk and place are a shift and a mask. */
const CHUNK_BITS = 12;
const CHUNK = 1 << CHUNK_BITS;

/** A record's own keys in order: one array per distinct list. */
type Keys = readonly string[];

/**
 * One chunk's records, without an object each: per record its keys, then the
 * values of all but `sessionId`, `sequence` and `at`, in `values` from
 * `starts[place]`; and its time in `at`.
 */
interface Chunk {
  values: unknown[];
  /** How many of `values` are written. */
  used: number;
  starts: Int32Array;
  at: Float64Array;
}

/** How many records a session's first chunk has room for before it grows: most sessions are short. */
const FIRST_ROOM = 32;

/**
 * A session's committed records in sequence order (the record at index `i` has
 * sequence `i + 1`), kept in chunks of a fixed size. A memory journal keeps
 * every record for the session's life, and on these machines each byte kept
 * costs a page fault and each object a mark in every full GC. So a record is
 * kept as its values in one array of its chunk, without the object, the session
 * id and the sequence, which `at` and `slice` build again, frozen, when read.
 */
export class RecordList {
  #sessionId: string;
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
    const chunk = place === 0 ? this.#nextChunk() : this.#chunks[this.#length >> CHUNK_BITS];
    if (place === chunk.starts.length) grow(chunk);
    const keys = keysOf(record);
    const values = chunk.values;
    let used = chunk.used;
    chunk.starts[place] = used;
    chunk.at[place] = record.at;
    values[used++] = keys;
    for (let index = 0; index < keys.length; index++) {
      const key = keys[index];
      if (key !== "sessionId" && key !== "sequence" && key !== "at") {
        values[used++] = (record as unknown as Fields)[key];
      }
    }
    chunk.used = used;
    this.#length++;
  }

  /** A new last chunk: the first with room for a few records, a later one for as many as the one before it held. */
  #nextChunk(): Chunk {
    const before = this.#chunks.at(-1);
    const chunk = before === undefined
      ? { values: [], used: 0, starts: new Int32Array(FIRST_ROOM), at: new Float64Array(FIRST_ROOM) }
      : { values: new Array(before.used), used: 0, starts: new Int32Array(CHUNK), at: new Float64Array(CHUNK) };
    this.#chunks.push(chunk);
    return chunk;
  }

  /** The record at `index` (from 0), which must be below `length`. */
  at(index: number): JournalRecord {
    return this.#record(this.#chunks[index >> CHUNK_BITS], index);
  }

  /** The records from `start` up to `end` (from 0; `end` excluded, clamped to `length`), as a new array. */
  slice(start: number, end: number = this.#length): JournalRecord[] {
    const last = Math.min(end, this.#length);
    const records: JournalRecord[] = [];
    for (let index = start; index < last; index++) records.push(this.#record(this.#chunks[index >> CHUNK_BITS], index));
    return records;
  }

  #record({ values, starts, at }: Chunk, index: number): JournalRecord {
    const place = index & (CHUNK - 1);
    let from = starts[place];
    const keys = values[from++] as Keys;
    return plainRecord(keys, values, from, this.#sessionId, index + 1, at[place]);
  }
}

/** Doubles the room of the first chunk's `starts` and `at`. */
function grow(chunk: Chunk): void {
  const starts = new Int32Array(chunk.starts.length * 2), at = new Float64Array(chunk.at.length * 2);
  starts.set(chunk.starts);
  at.set(chunk.at);
  chunk.starts = starts;
  chunk.at = at;
}

type Fields = Record<string, unknown>;

/** The key lists met so far, by record kind: records of one kind share a few. */
const KEYS_BY_KIND = new Map<unknown, Keys[]>();
/** How many key lists one kind keeps; a record of a kind past it keeps its own. */
const KEYS_MAX = 32;

/** The record's own keys in order, as the list of them records of its kind share. */
function keysOf(record: JournalRecord): Keys {
  const known = KEYS_BY_KIND.get(record.kind);
  if (known === undefined) {
    const keys = Object.keys(record);
    KEYS_BY_KIND.set(record.kind, [keys]);
    return keys;
  }
  for (let index = 0; index < known.length; index++) if (enumerates(record, known[index])) return known[index];
  // Another list, or the same one followed by keys `for in` finds on Object.prototype.
  const keys = Object.keys(record);
  const same = known.find((list) => list.length === keys.length && list.every((key, index) => key === keys[index]));
  if (same !== undefined) return same;
  if (known.length < KEYS_MAX) known.push(keys);
  return keys;
}

/** True when `for in` finds exactly `keys` on `record`, in that order. */
function enumerates(record: JournalRecord, keys: Keys): boolean {
  let index = 0;
  for (const key in record) if (key !== keys[index++]) return false;
  return index === keys.length;
}
