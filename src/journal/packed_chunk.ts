import { keyList, keyListValues } from "./key_lists.ts";
import { StringTable } from "./string_table.ts";
import { setOwnField } from "../util/own_field.ts";
import { MAX_JSON_DEPTH } from "../outcome/json.ts";
import { countOfUuid, uuidOfCount } from "../util/counted_uuid.ts";
import { HEX_PAIRS, HEX_VALUES } from "../util/hex.ts";

/** What a packed value starts with. */
const enum Tag {
  Null,
  False,
  True,
  /** An integer of 32 bits, zigzag varint. */
  Int,
  /** Any other number: 8 bytes. */
  Double,
  /** A string of the list's table: its number, varint. */
  Known,
  /** A string of code units below 256: its length, then a byte each. */
  Latin1,
  /** Any other short string: its length, then two bytes each. */
  Utf16,
  /** A long string, kept as it is in the chunk's `strings`: its place there. */
  Long,
  /** An array: its length, then its items. */
  Array,
  /** An object of a known key list: the list's number, then its values. */
  Object,
  /** An object with its own keys: their count, then each key and its value. */
  Keyed,
  /** A lowercase UUID string: its 16 bytes. */
  Uuid,
  /** A record's integer field below the record's own sequence (the call it names, say): the distance, varint. */
  Before,
  /** An id this process's `countedUuid` made: its count, varint. */
  Counted,
  /** A record's field holding what the same field of the record before holds. */
  Same,
  /** From here, an integer from -16 to 111 in the tag itself. */
  SmallInt = 0x40,
  /** From here, one of the first 64 strings of the list's table in the tag itself. */
  SmallKnown = 0xc0,
}

const SMALL_INT_MIN = -16;
const SMALL_INT_END = Tag.SmallKnown - Tag.SmallInt + SMALL_INT_MIN;
const SMALL_KNOWN_END = 0x100 - Tag.SmallKnown;

/** Strings longer than this are kept as they are, not packed. */
const LONG = 256;

const DASH = 0x2d;

/** The values of the object being packed at each depth, in its key list's order: packing never runs twice at once. */
const VALUES: unknown[][] = Array.from({ length: MAX_JSON_DEPTH }, () => []);

const scratch = new Float64Array(1);
const scratchBytes = new Uint8Array(scratch.buffer);

/**
 * A growing run of bytes holding JSON values packed: no object per value, and
 * nothing the garbage collector has to trace, but the long strings kept as they
 * are. `read` builds a value again, deep-frozen, equal to the one written.
 */
export class PackedChunk {
  #bytes: Uint8Array;
  #used = 0;
  #longs: string[] = [];

  /** An empty chunk with room for `bytes` bytes before it grows. */
  constructor(bytes: number) {
    this.#bytes = new Uint8Array(Math.max(bytes, 64));
  }

  /** How many bytes are written: where the next value starts. */
  get used(): number {
    return this.#used;
  }

  /**
   * Packs `value` when it is plain JSON as `frozenJson` takes it (finite
   * numbers, plain objects' own keys, arrays without holes, nesting below
   * `MAX_JSON_DEPTH` from `depth`); false when it is not, having written part
   * of it (see {@linkcode truncate}).
   */
  write(value: unknown, strings: StringTable, depth = 0): boolean {
    return typeof value === "object" ? this.#composite(value, strings, depth) : this.#leaf(value, strings);
  }

  /** {@linkcode write} for a value that is not an object: the most a record holds, packed without recursion. */
  #leaf(value: unknown, strings: StringTable): boolean {
    switch (typeof value) {
      case "string":
        this.#string(value, strings);
        return true;
      case "number":
        if (!Number.isFinite(value)) return false;
        this.number(value);
        return true;
      case "boolean":
        this.#byte(value ? Tag.True : Tag.False);
        return true;
      default:
        return false;
    }
  }

  /** {@linkcode write} for `null`, an array or an object. */
  #composite(value: object | null, strings: StringTable, depth: number): boolean {
    if (value === null) {
      this.#byte(Tag.Null);
      return true;
    }
    if (depth >= MAX_JSON_DEPTH) return false;
    if (Array.isArray(value)) {
      this.#byte(Tag.Array);
      this.#varint(value.length);
      for (let index = 0; index < value.length; index++) {
        if (!(index in value) || !this.write(value[index], strings, depth + 1)) return false;
      }
      return true;
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return false;
    const values = VALUES[depth];
    const list = keyListValues(value, values);
    if (list >= 0) {
      this.#byte(Tag.Object);
      this.#varint(list);
      const count = keyList(list).length;
      for (let index = 0; index < count; index++) {
        const child = values[index];
        if (!(typeof child === "object" ? this.#composite(child, strings, depth + 1) : this.#leaf(child, strings))) {
          return false;
        }
      }
      return true;
    }
    const keys = Object.keys(value);
    this.#byte(Tag.Keyed);
    this.#varint(keys.length);
    for (const key of keys) {
      this.#string(key, strings);
      if (!this.write((value as Fields)[key], strings, depth + 1)) return false;
    }
    return true;
  }

  /** Forgets what was written after `used` bytes and `longs` long strings: a record that turned out not to be JSON. */
  truncate(used: number, longs: number): void {
    this.#used = used;
    this.#longs.length = longs;
  }

  /** How many long strings the chunk keeps. */
  get longs(): number {
    return this.#longs.length;
  }

  /** Packs a number exactly: -0 and fractions included. */
  number(value: number): void {
    if ((value | 0) === value && !Object.is(value, -0)) {
      if (value >= SMALL_INT_MIN && value < SMALL_INT_END) return this.#byte(Tag.SmallInt + value - SMALL_INT_MIN);
      this.#byte(Tag.Int);
      this.#varint(((value << 1) ^ (value >> 31)) >>> 0);
      return;
    }
    this.#double(value);
  }

  /**
   * Packs the time `at` as its distance from `base` when that is an exact
   * integer of 32 bits (a chunk's records are close in time), else whole.
   */
  time(at: number, base: number): void {
    const distance = at - base;
    if ((distance | 0) === distance && base + distance === at) return this.number(distance);
    this.#double(at);
  }

  #double(value: number): void {
    this.#room(9);
    this.#bytes[this.#used++] = Tag.Double;
    scratch[0] = value;
    this.#bytes.set(scratchBytes, this.#used);
    this.#used += 8;
  }

  /**
   * Packs a field of the record numbered `sequence`: an integer just below it
   * (the call an event names, say) as the distance, else as {@linkcode write}.
   */
  field(value: unknown, sequence: number, strings: StringTable): boolean {
    if (typeof value === "string") {
      this.#string(value, strings);
      return true;
    }
    if (typeof value === "object") return this.#composite(value, strings, 0);
    if (typeof value === "number") {
      const distance = sequence - value;
      if (distance > 0 && distance < 2 ** 32 && Number.isInteger(distance) && Object.is(sequence - distance, value)) {
        this.#byte(Tag.Before);
        this.#varint(distance);
        return true;
      }
    }
    return this.#leaf(value, strings);
  }

  /** Packs a record's field as holding what the same field of the record before holds. */
  same(): void {
    this.#byte(Tag.Same);
  }

  /** True, moving past it, when the field at `cursor.at` was packed by {@linkcode same}. */
  readSame(cursor: Cursor): boolean {
    if (this.#bytes[cursor.at] !== Tag.Same) return false;
    cursor.at++;
    return true;
  }

  /** The field packed at `cursor.at` by {@linkcode field} for the record numbered `sequence`. */
  readField(cursor: Cursor, sequence: number, strings: StringTable): unknown {
    if (this.#bytes[cursor.at] !== Tag.Before) return this.read(cursor, strings);
    cursor.at++;
    return sequence - this.#readVarint(cursor);
  }

  /** Packs a count: an unsigned integer below 2^32. */
  count(value: number): void {
    this.#varint(value);
  }

  /** Packs an unsigned integer below 2^32. */
  #varint(value: number): void {
    this.#room(5);
    const bytes = this.#bytes;
    let used = this.#used;
    while (value >= 0x80) {
      bytes[used++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    bytes[used] = value;
    this.#used = used + 1;
  }

  #byte(value: number): void {
    const used = this.#used;
    if (used === this.#bytes.length) this.#room(1);
    this.#bytes[used] = value;
    this.#used = used + 1;
  }

  #string(text: string, strings: StringTable): void {
    const number = strings.numberOf(text);
    if (number >= 0) {
      if (number < SMALL_KNOWN_END) return this.#byte(Tag.SmallKnown + number);
      this.#byte(Tag.Known);
      return this.#varint(number);
    }
    if (text.length === 36) {
      const counted = countOfUuid(text);
      if (counted >= 0 && counted < 2 ** 32) {
        this.#byte(Tag.Counted);
        return this.#varint(counted);
      }
      if (this.#uuid(text)) return;
    }
    if (text.length > LONG) {
      this.#byte(Tag.Long);
      this.#varint(this.#longs.length);
      this.#longs.push(text);
      return;
    }
    this.#room(text.length * 2 + 6);
    const bytes = this.#bytes;
    const tagAt = this.#used;
    bytes[tagAt] = Tag.Latin1;
    this.#used = tagAt + 1;
    this.#varint(text.length);
    let at = this.#used;
    for (let index = 0; index < text.length; index++) {
      const code = text.charCodeAt(index);
      if (code > 0xff) return this.#wide(text, tagAt);
      bytes[at++] = code;
    }
    this.#used = at;
  }

  /** Packs `text` as 16 bytes when it is a UUID in lowercase; false, having written nothing, when it is not. */
  #uuid(text: string): boolean {
    this.#room(17);
    const bytes = this.#bytes;
    let at = this.#used + 1;
    for (let index = 0; index < 36; index += 2) {
      if (index === 8 || index === 13 || index === 18 || index === 23) {
        if (text.charCodeAt(index) !== DASH) return false;
        index--;
        continue;
      }
      const high = HEX_VALUES[text.charCodeAt(index)], low = HEX_VALUES[text.charCodeAt(index + 1)];
      if ((high | low) < 0) return false;
      bytes[at++] = (high << 4) | low;
    }
    bytes[this.#used] = Tag.Uuid;
    this.#used = at;
    return true;
  }

  /** Packs `text` from `tagAt` again, two bytes a code unit: it has one above 255. */
  #wide(text: string, tagAt: number): void {
    const bytes = this.#bytes;
    bytes[tagAt] = Tag.Utf16;
    this.#used = tagAt + 1;
    this.#varint(text.length);
    let at = this.#used;
    for (let index = 0; index < text.length; index++) {
      const code = text.charCodeAt(index);
      bytes[at++] = code;
      bytes[at++] = code >> 8;
    }
    this.#used = at;
  }

  #room(bytes: number): void {
    if (this.#used + bytes <= this.#bytes.length) return;
    const grown = new Uint8Array(Math.max(Math.ceil(this.#bytes.length * 1.5), this.#used + bytes));
    grown.set(this.#bytes.subarray(0, this.#used));
    this.#bytes = grown;
  }

  /** The value packed at `cursor.at`, built again and deep-frozen; moves the cursor past it. */
  read(cursor: Cursor, strings: StringTable): unknown {
    const tag = this.#bytes[cursor.at++];
    switch (tag) {
      case Tag.Null:
        return null;
      case Tag.False:
        return false;
      case Tag.True:
        return true;
      case Tag.Uuid:
        return this.#readUuid(cursor);
      case Tag.Counted:
        return uuidOfCount(this.#readVarint(cursor));
      case Tag.Int: {
        const zigzag = this.#readVarint(cursor);
        return (zigzag >>> 1) ^ -(zigzag & 1);
      }
      case Tag.Double:
        scratchBytes.set(this.#bytes.subarray(cursor.at, cursor.at + 8));
        cursor.at += 8;
        return scratch[0];
      case Tag.Array: {
        const length = this.#readVarint(cursor);
        const items = new Array(length);
        for (let index = 0; index < length; index++) items[index] = this.read(cursor, strings);
        return Object.freeze(items);
      }
      case Tag.Object: {
        const keys = keyList(this.#readVarint(cursor));
        const object: Fields = {};
        for (let index = 0; index < keys.length; index++) setOwnField(object, keys[index], this.read(cursor, strings));
        return Object.freeze(object);
      }
      case Tag.Keyed: {
        const count = this.#readVarint(cursor);
        const object: Fields = {};
        for (let index = 0; index < count; index++) {
          const key = this.read(cursor, strings) as string;
          setOwnField(object, key, this.read(cursor, strings));
        }
        return Object.freeze(object);
      }
      default:
        if (tag >= Tag.SmallKnown) return strings.at(tag - Tag.SmallKnown);
        if (tag >= Tag.SmallInt) return tag - Tag.SmallInt + SMALL_INT_MIN;
        return this.#readString(tag, cursor, strings);
    }
  }

  /** Moves `cursor` past the value packed at `cursor.at`, building nothing. */
  skip(cursor: Cursor): void {
    const tag = this.#bytes[cursor.at++];
    switch (tag) {
      case Tag.Int:
      case Tag.Known:
      case Tag.Long:
      case Tag.Before:
      case Tag.Counted:
        this.#readVarint(cursor);
        return;
      case Tag.Double:
        cursor.at += 8;
        return;
      case Tag.Uuid:
        cursor.at += 16;
        return;
      case Tag.Latin1:
      case Tag.Utf16: {
        const length = this.#readVarint(cursor);
        cursor.at += tag === Tag.Utf16 ? 2 * length : length;
        return;
      }
      case Tag.Array:
        for (let count = this.#readVarint(cursor); count > 0; count--) this.skip(cursor);
        return;
      case Tag.Object:
        for (let count = keyList(this.#readVarint(cursor)).length; count > 0; count--) this.skip(cursor);
        return;
      case Tag.Keyed:
        for (let count = 2 * this.#readVarint(cursor); count > 0; count--) this.skip(cursor);
        return;
    }
  }

  /** The time packed at `cursor.at` by {@linkcode time} with `base`. */
  readTime(cursor: Cursor, base: number): number {
    const tag = this.#bytes[cursor.at];
    const value = this.read(cursor, NO_STRINGS) as number;
    return tag === Tag.Double ? value : base + value;
  }

  /** The count packed at `cursor.at` by {@linkcode count}. */
  readCount(cursor: Cursor): number {
    return this.#readVarint(cursor);
  }

  #readString(tag: number, cursor: Cursor, strings: StringTable): string {
    const number = this.#readVarint(cursor);
    if (tag === Tag.Known) return strings.at(number);
    if (tag === Tag.Long) return this.#longs[number];
    const bytes = this.#bytes, from = cursor.at;
    // Packed strings are short (a long one is kept whole), so their code units fit one call's arguments.
    if (tag === Tag.Latin1) {
      cursor.at += number;
      return String.fromCharCode.apply(null, bytes.subarray(from, from + number) as unknown as number[]);
    }
    const codes = new Array<number>(number);
    for (let index = 0; index < number; index++) {
      codes[index] = bytes[from + 2 * index] | (bytes[from + 2 * index + 1] << 8);
    }
    cursor.at += number * 2;
    return String.fromCharCode.apply(null, codes);
  }

  #readUuid(cursor: Cursor): string {
    const bytes = this.#bytes, at = cursor.at;
    cursor.at += 16;
    const hex = (from: number, to: number) => {
      let text = "";
      for (let index = from; index < to; index++) text += HEX_PAIRS[bytes[at + index]];
      return text;
    };
    return `${hex(0, 4)}-${hex(4, 6)}-${hex(6, 8)}-${hex(8, 10)}-${hex(10, 16)}`;
  }

  #readVarint(cursor: Cursor): number {
    const bytes = this.#bytes;
    let value = 0, shift = 0, byte;
    do {
      byte = bytes[cursor.at++];
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return value;
  }
}

/** Where a read is in a chunk. */
export interface Cursor {
  at: number;
}

type Fields = Record<string, unknown>;

const NO_STRINGS = new StringTable();
