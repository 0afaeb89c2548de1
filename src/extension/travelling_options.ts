import { BrainError } from "../outcome/errors.ts";
import { findNonJson, type JsonValue, MAX_JSON_DEPTH } from "../outcome/json.ts";

/**
 * A placement's options as they travel between Brain and an Application tool extension, which compares them with
 * the options it serves the Tool with: JSON, without the object properties whose value is undefined (an optional
 * option not given, which JSON drops); `invalid_options` when the rest is not JSON.
 */
export function travellingOptions(tool: string, options: Readonly<Record<string, unknown>>): JsonValue | BrainError {
  const defined = withoutUndefined(options, 0);
  const nonJson = findNonJson(defined);
  if (nonJson === undefined) return defined as JsonValue;
  return new BrainError(
    "invalid_options",
    `tool ${tool}: an Application tool extension compares a placement's options with its own as JSON, and ` +
      `${nonJson} is not JSON`,
  );
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
