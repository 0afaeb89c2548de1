import { isLowSurrogate, utf8Length } from "../util/utf8.ts";
import { errorText } from "../util/error_text.ts";
import { hasOwnField, setOwnField } from "../util/own_field.ts";

/** A value that survives `JSON.stringify`/`JSON.parse` unchanged. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * How deep arrays and objects may nest in a value Brain accepts as JSON: deeper
 * values are refused like non-JSON ones, so no check or encoding overflows the stack.
 */
export const MAX_JSON_DEPTH = 256;

/**
 * Returns the path of the first part of `value` that is not plain JSON, or
 * `undefined` when all of it is. Rejected: `undefined`, non-finite numbers, BigInt,
 * functions, symbols, class instances (any prototype other than Object's or null),
 * sparse arrays, cycles and nesting deeper than {@linkcode MAX_JSON_DEPTH}.
 */
export function findNonJson(value: unknown, path = "$"): string | undefined {
  try {
    return isJson(value) ? undefined : visit(value, path, new Set(), 0);
  } catch (error) {
    // A getter, a Proxy trap or a toJSON that throws: such a value is not data. (The borrowed stack
    // of the failed traversal is dropped; the next one makes a fresh one.)
    return `${path} cannot be read: ${errorText(error)}`;
  }
}

/**
 * The objects a traversal is inside, outermost first, to catch cycles: one
 * stack, kept between traversals so a check allocates nothing. A traversal that
 * starts inside another (from a Proxy trap) finds it taken and makes its own.
 */
let spareAncestors: unknown[] | undefined = [];

function borrowAncestors(): unknown[] {
  const ancestors = spareAncestors ?? [];
  spareAncestors = undefined;
  return ancestors;
}

/** True when `value` is plain JSON: {@linkcode findNonJson} without the path, allocating nothing. */
function isJson(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return isJsonLeaf(value);
  const ancestors = borrowAncestors();
  const json = isJsonIn(value, ancestors, 0);
  spareAncestors = ancestors;
  return json;
}

function isJsonLeaf(value: unknown): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object":
      return value === null;
    default:
      return false;
  }
}

/** Checks `value` below `depth` ancestors. */
function isJsonIn(value: unknown, ancestors: unknown[], depth: number): boolean {
  if (typeof value !== "object" || value === null) return isJsonLeaf(value);
  if (depth >= MAX_JSON_DEPTH || inside(ancestors, depth, value)) return false;
  ancestors[depth] = value;
  let json = true;
  if (Array.isArray(value)) {
    for (let index = 0; json && index < value.length; index++) {
      json = index in value && isJsonIn(value[index], ancestors, depth + 1);
    }
  } else {
    const prototype = Object.getPrototypeOf(value);
    json = prototype === Object.prototype || prototype === null;
    for (const key in value) {
      if (!json) break;
      if (hasOwnField(value, key)) json = isJsonIn((value as Record<string, unknown>)[key], ancestors, depth + 1);
    }
  }
  ancestors[depth] = undefined;
  return json;
}

function inside(ancestors: unknown[], depth: number, value: object): boolean {
  for (let index = 0; index < depth; index++) if (ancestors[index] === value) return true;
  return false;
}

/** JSON text of `value` with every object's keys in order: equal for values equal as JSON, whatever their key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, inner) =>
      inner !== null && typeof inner === "object" && !Array.isArray(inner)
        ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0))
        : inner,
  );
}

/**
 * A deep-frozen copy of `value` when it is plain JSON (see {@linkcode findNonJson}),
 * made in the one traversal that checks it; `undefined` when it is not (ask
 * `findNonJson` where).
 */
export function frozenJson(value: unknown): JsonValue | undefined {
  return copyRoot(value, false);
}

/**
 * {@linkcode frozenJson} with the copy's {@linkcode jsonSize}, counted in the
 * same traversal; `undefined` when `value` is not plain JSON.
 */
export function frozenJsonSized(value: unknown): { copy: JsonValue; size: number } | undefined {
  const outer = copiedSize;
  copiedSize = 0;
  try {
    const copy = copyRoot(value, true);
    return copy === undefined ? undefined : { copy, size: copiedSize };
  } finally {
    // A getter the traversal ran may have sized a copy of its own.
    copiedSize = outer;
  }
}

/** The size of what a sized copy has copied so far. */
let copiedSize = 0;

function copyRoot(value: unknown, sized: boolean): JsonValue | undefined {
  if (typeof value !== "object" || value === null) return copyLeaf(value, sized);
  const ancestors = borrowAncestors();
  let copied;
  try {
    copied = copy(value, ancestors, 0, sized);
  } catch {
    return undefined;
  }
  spareAncestors = ancestors;
  return copied;
}

function copyLeaf(value: unknown, sized: boolean): JsonValue | undefined {
  if (!sized) return isJsonLeaf(value) ? value as JsonValue : undefined;
  const size = leafSize(value);
  if (size < 0) return undefined;
  copiedSize += size;
  return value as JsonValue;
}

function copy(value: unknown, ancestors: unknown[], depth: number, sized: boolean): JsonValue | undefined {
  if (typeof value !== "object" || value === null) return copyLeaf(value, sized);
  if (depth >= MAX_JSON_DEPTH || inside(ancestors, depth, value)) return undefined;
  ancestors[depth] = value;
  const copied = Array.isArray(value)
    ? copyArray(value, ancestors, depth + 1, sized)
    : copyObject(value, ancestors, depth + 1, sized);
  ancestors[depth] = undefined;
  return copied === undefined ? undefined : Object.freeze(copied) as JsonValue;
}

function copyArray(value: unknown[], ancestors: unknown[], depth: number, sized: boolean): JsonValue[] | undefined {
  const copied: JsonValue[] = [];
  for (let index = 0; index < value.length; index++) {
    if (!(index in value)) return undefined;
    const child = copy(value[index], ancestors, depth, sized);
    if (child === undefined) return undefined;
    copied.push(child);
  }
  // The brackets and a comma between each two elements.
  if (sized) copiedSize += copied.length === 0 ? 2 : copied.length + 1;
  return copied;
}

function copyObject(
  value: object,
  ancestors: unknown[],
  depth: number,
  sized: boolean,
): { [key: string]: JsonValue } | undefined {
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return undefined;
  const copied = new PlainObject();
  // The braces, and per member its key, a colon and a comma before all but the first.
  let size = 1;
  for (const key in value) {
    if (!hasOwnField(value, key)) continue;
    const child = copy((value as Record<string, unknown>)[key], ancestors, depth, sized);
    if (child === undefined) return undefined;
    setOwnField(copied, key, child);
    if (sized) size += 1 + stringSize(key) + 1;
  }
  if (sized) copiedSize += size === 1 ? 2 : size;
  return copied;
}

/**
 * Builds copied objects: a constructor rather than `{}`, so V8 sizes them for
 * the fields copies have (a literal reserves four, which a kept copy of a
 * two-field object would carry for the journal's lifetime). Its prototype is
 * Object's: a copy is a plain object.
 */
const PlainObject = function () {} as unknown as new () => { [key: string]: JsonValue };
PlainObject.prototype = Object.prototype;

function visit(value: unknown, path: string, seen: Set<object>, depth: number): string | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : `${path} is ${value}`;
    case "object":
      break;
    default:
      return `${path} is ${typeof value}`;
  }
  if (value === null) return undefined;
  if (depth >= MAX_JSON_DEPTH) return `${path.slice(0, 64)}... nests deeper than ${MAX_JSON_DEPTH} levels`;
  if (seen.has(value)) return `${path} is a cycle`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        if (!(index in value)) return `${path}[${index}] is a hole`;
        const found = visit(value[index], `${path}[${index}]`, seen, depth + 1);
        if (found) return found;
      }
      return undefined;
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      return `${path} is an instance of ${prototype?.constructor?.name ?? "a class"}`;
    }
    for (const [key, child] of Object.entries(value)) {
      const found = visit(child, `${path}.${key}`, seen, depth + 1);
      if (found) return found;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}

/** True when `value` is plain JSON (see {@linkcode findNonJson}). */
export function isJsonValue(value: unknown): value is JsonValue {
  return findNonJson(value) === undefined;
}

/** The UTF-8 size of a value's JSON text, the unit of the emitted-bytes budget. */
export function jsonByteLength(value: unknown): number {
  return value === undefined ? 0 : utf8Length(JSON.stringify(value));
}

/**
 * The UTF-8 size of `value`'s `JSON.stringify` text when `value` is plain JSON
 * (see {@linkcode findNonJson}), or -1 when it is not: the check and
 * {@linkcode jsonByteLength} in one traversal, making no text.
 */
export function jsonSize(value: unknown): number {
  if (typeof value !== "object" || value === null) return leafSize(value);
  const ancestors = borrowAncestors();
  let size;
  try {
    size = sizeIn(value, ancestors, 0);
  } catch {
    // A getter or Proxy trap that throws: not JSON. (The borrowed stack is dropped.)
    return -1;
  }
  spareAncestors = ancestors;
  return size;
}

function leafSize(value: unknown): number {
  switch (typeof value) {
    case "string":
      return stringSize(value);
    case "boolean":
      return value ? 4 : 5;
    case "number":
      return numberSize(value);
    case "object":
      return value === null ? 4 : -1;
    default:
      return -1;
  }
}

/**
 * The length of `String(value)` (-1 when it is not finite), counted without
 * making the text for an integer below 10^21, which prints as its digits.
 */
function numberSize(value: number): number {
  if (!Number.isInteger(value) || value >= 1e21 || value <= -1e21) {
    return Number.isFinite(value) ? String(value).length : -1;
  }
  let size = value < 0 ? 2 : 1;
  for (let rest = Math.abs(value); rest >= 10; rest /= 10) size++;
  return size;
}

function sizeIn(value: unknown, ancestors: unknown[], depth: number): number {
  if (typeof value !== "object" || value === null) return leafSize(value);
  if (depth >= MAX_JSON_DEPTH || inside(ancestors, depth, value)) return -1;
  ancestors[depth] = value;
  let size: number;
  if (Array.isArray(value)) {
    // The brackets and a comma between each two elements.
    size = value.length === 0 ? 2 : value.length + 1;
    for (let index = 0; index < value.length; index++) {
      const element = index in value ? sizeIn(value[index], ancestors, depth + 1) : -1;
      if (element < 0) {
        size = -1;
        break;
      }
      size += element;
    }
  } else size = objectSize(value, ancestors, depth);
  ancestors[depth] = undefined;
  return size;
}

function objectSize(value: object, ancestors: unknown[], depth: number): number {
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return -1;
  // The braces, and per member its key, a colon, its value and a comma before all but the first.
  let size = 1;
  for (const key in value) {
    if (!hasOwnField(value, key)) continue;
    const member = sizeIn((value as Record<string, unknown>)[key], ancestors, depth + 1);
    if (member < 0) return -1;
    size += 1 + stringSize(key) + 1 + member;
  }
  return size === 1 ? 2 : size;
}

/** The UTF-8 size of `text` as a JSON string: quotes, escapes and, escaped, lone surrogates. */
function stringSize(text: string): number {
  let size = 2 + text.length;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) {
      if (unit === 0x22 || unit === 0x5c) size += 1; // \" and \\
      else if (unit < 0x20) size += unit === 8 || unit === 9 || unit === 10 || unit === 12 || unit === 13 ? 1 : 5;
    } else if (unit < 0x800) size += 1;
    else if (unit < 0xd800 || unit > 0xdfff) size += 2;
    else if (unit <= 0xdbff && isLowSurrogate(text.charCodeAt(index + 1))) {
      size += 2; // two units, four bytes
      index++;
    } else size += 5; // a lone surrogate, escaped as \uXXXX
  }
  return size;
}
