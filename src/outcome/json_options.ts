import { findNonJson, type JsonValue, MAX_JSON_DEPTH } from "./json.ts";

/**
 * A placement's parsed options as JSON carries them out of the application's process (to a Component's guest, an
 * Application tool extension, a server): without the object properties whose value is undefined (an optional
 * option not given, which JSON drops). A string naming the first part that is not JSON when the rest is not.
 */
export function jsonOptions(options: Readonly<Record<string, unknown>>): { json: JsonValue } | { nonJson: string } {
  const defined = withoutUndefined(options, 0);
  const nonJson = findNonJson(defined);
  return nonJson === undefined ? { json: defined as JsonValue } : { nonJson };
}

/** `value` with no undefined object property, down to where JSON stops (deeper values stay, for findNonJson). */
function withoutUndefined(value: unknown, depth: number): unknown {
  if (typeof value !== "object" || value === null || depth > MAX_JSON_DEPTH) return value;
  if (Array.isArray(value)) return value.map((item) => withoutUndefined(item, depth + 1));
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const defined: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (inner !== undefined) {
      Object.defineProperty(defined, key, { value: withoutUndefined(inner, depth + 1), enumerable: true });
    }
  }
  return defined;
}
