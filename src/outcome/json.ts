import { utf8Length } from "../util/utf8.ts";
import { errorText } from "../util/error_text.ts";

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
    return isJson(value, []) ? undefined : visit(value, path, new Set(), 0);
  } catch (error) {
    // A getter, a Proxy trap or a toJSON that throws: such a value is not data.
    return `${path} cannot be read: ${errorText(error)}`;
  }
}

/** The allocation-free check behind {@linkcode findNonJson}; `ancestors` catches cycles. */
function isJson(value: unknown, ancestors: object[]): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object":
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (ancestors.length >= MAX_JSON_DEPTH || ancestors.includes(value)) return false;
  ancestors.push(value);
  let json = true;
  if (Array.isArray(value)) {
    for (let index = 0; json && index < value.length; index++) {
      json = index in value && isJson(value[index], ancestors);
    }
  } else {
    const prototype = Object.getPrototypeOf(value);
    json = prototype === Object.prototype || prototype === null;
    for (const key in value) {
      if (!json) break;
      if (Object.hasOwn(value, key)) json = isJson((value as Record<string, unknown>)[key], ancestors);
    }
  }
  ancestors.pop();
  return json;
}

/**
 * A deep-frozen copy of `value` when it is plain JSON (see {@linkcode findNonJson}),
 * made in the one traversal that checks it; `undefined` when it is not (ask
 * `findNonJson` where).
 */
export function frozenJson(value: unknown): JsonValue | undefined {
  try {
    return copy(value, []);
  } catch {
    return undefined;
  }
}

function copy(value: unknown, ancestors: object[]): JsonValue | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? value : undefined;
    case "object":
      break;
    default:
      return undefined;
  }
  if (value === null) return null;
  if (ancestors.length >= MAX_JSON_DEPTH || ancestors.includes(value)) return undefined;
  ancestors.push(value);
  const copied = Array.isArray(value) ? copyArray(value, ancestors) : copyObject(value, ancestors);
  ancestors.pop();
  return copied === undefined ? undefined : Object.freeze(copied) as JsonValue;
}

function copyArray(value: unknown[], ancestors: object[]): JsonValue[] | undefined {
  const copied: JsonValue[] = [];
  for (let index = 0; index < value.length; index++) {
    if (!(index in value)) return undefined;
    const child = copy(value[index], ancestors);
    if (child === undefined) return undefined;
    copied.push(child);
  }
  return copied;
}

function copyObject(value: object, ancestors: object[]): { [key: string]: JsonValue } | undefined {
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return undefined;
  const copied: { [key: string]: JsonValue } = {};
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const child = copy((value as Record<string, unknown>)[key], ancestors);
    if (child === undefined) return undefined;
    if (key === "__proto__") {
      Object.defineProperty(copied, key, { value: child, enumerable: true, writable: true, configurable: true });
    } else copied[key] = child;
  }
  return copied;
}

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
