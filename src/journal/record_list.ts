import type { JournalRecord } from "./records.ts";

/** Records per chunk: a power of two, so a record's chunk and place are a shift and a mask. */
const CHUNK_BITS = 12;
const CHUNK = 1 << CHUNK_BITS;

/**
 * A session's committed records in sequence order, kept in chunks of a fixed
 * size: a long session never sits in one ever-growing array, which V8 copies
 * whole each time it grows.
 */
export class RecordList {
  #chunks: JournalRecord[][] = [];
  #length = 0;

  /** How many records the list holds. */
  get length(): number {
    return this.#length;
  }

  /** Adds the next record. */
  push(record: JournalRecord): void {
    const place = this.#length & (CHUNK - 1);
    if (place === 0) this.#chunks.push([record]);
    else this.#chunks[this.#length >> CHUNK_BITS].push(record);
    this.#length++;
  }

  /** The record at `index` (from 0), which must be below `length`. */
  at(index: number): JournalRecord {
    return this.#chunks[index >> CHUNK_BITS][index & (CHUNK - 1)];
  }

  /** The records from `start` up to `end` (from 0; `end` excluded, clamped to `length`), as a new array. */
  slice(start: number, end: number = this.#length): JournalRecord[] {
    const last = Math.min(end, this.#length);
    const records: JournalRecord[] = [];
    for (let index = start; index < last;) {
      const chunk = this.#chunks[index >> CHUNK_BITS];
      const from = index & (CHUNK - 1);
      const to = Math.min(CHUNK, from + last - index);
      for (let place = from; place < to; place++) records.push(chunk[place]);
      index += to - from;
    }
    return records;
  }
}
