/**
 * The key lists of the objects packed records hold (see `PackedChunk`), each
 * kept once for the process and named by its number: the records and values of
 * one shape then pack their keys as one number.
 */
const LISTS: (readonly string[])[] = [];
/** The numbers of the lists met so far, by a hash of their keys: objects of one shape share few. */
const BY_HASH = new Map<number, number[]>();
/** How many lists the process keeps, and how many share a hash; past either, an object packs its own keys. */
const LISTS_MAX = 65_536;
const SHARING_HASH_MAX = 8;
/** Only lists of this many keys at most are kept: a larger object (a map of ids, say) is rarely repeated. */
const LIST_KEYS_MAX = 32;

/** The list each first key (`""` for none) last led to: the objects of a place in a record mostly share one. */
const LAST_BY_FIRST_KEY = new Map<string, number>();

/**
 * The number of `object`'s own enumerable keys as a list, in their order, or -1
 * when the process keeps no more lists (its keys are then packed with it).
 * `hint` names the last list of objects like it (a record's kind, say); by
 * default, the last for the same first key.
 */
export function keyListOf(object: object, hint?: string): number {
  let first = "";
  if (hint === undefined) {
    for (const key in object) {
      first = key;
      break;
    }
  }
  const last = LAST_BY_FIRST_KEY.get(hint ?? first);
  if (last !== undefined && enumerates(object, LISTS[last])) return last;
  const list = listOf(object);
  if (list >= 0) LAST_BY_FIRST_KEY.set(hint ?? first, list);
  return list;
}

/**
 * {@linkcode keyListOf}, putting `object`'s values in `values` in the list's
 * order as it finds its keys: one `for in`, whose loads are the fastest a
 * shape the call site has not seen before can have. `hint` names the last
 * list of objects like it (a record's kind, say); by default, the last for
 * the same first key.
 */
export function keyListValues(object: object, values: unknown[], hint?: string): number {
  const found = hint === undefined ? firstKeyListValues(object, values) : hintedListValues(object, values, hint);
  return found >= 0 ? found : listValues(object, values, hint);
}

/** The last list for `hint`, when `object`'s keys are exactly it, its values put in `values`; else -1. */
function hintedListValues(object: object, values: unknown[], hint: string): number {
  const list = LAST_BY_FIRST_KEY.get(hint);
  if (list === undefined) return -1;
  const keys = LISTS[list];
  let index = 0;
  for (const key in object) {
    if (key !== keys[index]) return -1;
    values[index++] = (object as Fields)[key];
  }
  return index === keys.length ? list : -1;
}

/** {@linkcode hintedListValues} with the list the first key last led to. */
function firstKeyListValues(object: object, values: unknown[]): number {
  let keys: readonly string[] | undefined, list = -1, index = 0;
  for (const key in object) {
    if (keys === undefined) {
      list = LAST_BY_FIRST_KEY.get(key) ?? -1;
      if (list < 0) return -1;
      keys = LISTS[list];
    }
    if (key !== keys[index]) return -1;
    values[index++] = (object as Fields)[key];
  }
  return keys !== undefined && index === keys.length ? list : -1;
}

/** {@linkcode keyListValues} the slow way: the list found or made, then its values read one by one. */
function listValues(object: object, values: unknown[], hint: string | undefined): number {
  const list = keyListOf(object, hint);
  if (list < 0) return list;
  const keys = LISTS[list];
  for (let index = 0; index < keys.length; index++) values[index] = (object as Fields)[keys[index]];
  return list;
}

function listOf(object: object): number {
  let hash = 0, count = 0;
  for (const key in object) {
    if (++count > LIST_KEYS_MAX) return -1;
    hash = hashed(hash, key);
  }
  const known = BY_HASH.get(hash);
  if (known !== undefined) {
    for (let index = 0; index < known.length; index++) if (enumerates(object, LISTS[known[index]])) return known[index];
  }
  // A new list, or a known one followed by keys `for in` finds on Object.prototype.
  return keyListNumber(Object.keys(object));
}

/**
 * The number of the list `keys` (distinct, in the order `Object.keys` gives
 * them), kept from now on when it is new, or -1 when the process keeps no more.
 */
export function keyListNumber(keys: readonly string[]): number {
  if (keys.length > LIST_KEYS_MAX) return -1;
  const hash = keysHash(keys);
  const known = BY_HASH.get(hash);
  const same = known?.find((id) => sameKeys(LISTS[id], keys));
  if (same !== undefined) return same;
  if (LISTS.length >= LISTS_MAX || (known !== undefined && known.length >= SHARING_HASH_MAX)) return -1;
  LISTS.push(Object.freeze([...keys]));
  if (known === undefined) BY_HASH.set(hash, [LISTS.length - 1]);
  else known.push(LISTS.length - 1);
  return LISTS.length - 1;
}

function keysHash(keys: readonly string[]): number {
  let hash = 0;
  for (let index = 0; index < keys.length; index++) hash = hashed(hash, keys[index]);
  return hash;
}

function hashed(hash: number, key: string): number {
  return (Math.imul(hash, 31) + key.length * 131 + key.charCodeAt(0) * 7 + key.charCodeAt(key.length - 1)) | 0;
}

/** The key list numbered `id` by {@linkcode keyListOf}. */
export function keyList(id: number): readonly string[] {
  return LISTS[id];
}

/** True when `for in` finds exactly `keys` on `object`, in that order. */
function enumerates(object: object, keys: readonly string[]): boolean {
  let index = 0;
  for (const key in object) if (key !== keys[index++]) return false;
  return index === keys.length;
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index++) if (a[index] !== b[index]) return false;
  return true;
}

type Fields = Record<string, unknown>;
