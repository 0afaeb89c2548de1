/** A value that survives `JSON.stringify`/`JSON.parse` unchanged. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * Returns the path of the first part of `value` that is not plain JSON, or
 * `undefined` when all of it is. Rejected: `undefined`, non-finite numbers, BigInt,
 * functions, symbols, class instances (any prototype other than Object's or null),
 * sparse arrays and cycles.
 */
export function findNonJson(value: unknown, path = "$"): string | undefined {
  return visit(value, path, new Set());
}

function visit(value: unknown, path: string, seen: Set<object>): string | undefined {
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
  if (seen.has(value)) return `${path} is a cycle`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        if (!(index in value)) return `${path}[${index}] is a hole`;
        const found = visit(value[index], `${path}[${index}]`, seen);
        if (found) return found;
      }
      return undefined;
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      return `${path} is an instance of ${prototype?.constructor?.name ?? "a class"}`;
    }
    for (const [key, child] of Object.entries(value)) {
      const found = visit(child, `${path}.${key}`, seen);
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

const encoder = new TextEncoder();

/** The UTF-8 size of a value's JSON text, the unit of the emitted-bytes budget. */
export function jsonByteLength(value: unknown): number {
  return value === undefined ? 0 : encoder.encode(JSON.stringify(value)).byteLength;
}
