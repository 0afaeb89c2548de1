import { BrainError } from "./errors.ts";
import { errorText } from "../util/error_text.ts";

/**
 * Returns `value` when it is a non-null object (and not an array); otherwise
 * throws `invalid_argument` naming `where`, so a public function given nothing
 * or the wrong thing fails with a stable code instead of a `TypeError`.
 */
export function checkObject<T>(where: string, value: T): T {
  if (value === null || typeof value !== "object" || isList(value)) {
    const got = value === null ? "null" : isList(value) ? "an array" : typeof value;
    throw new BrainError("invalid_argument", `${where} must be an object, got ${got}`);
  }
  return value;
}

/**
 * Throws `invalid_argument` naming every key of `options` that `known` lacks,
 * so a misspelt option (`{ timeout }` for `{ timeoutMs }`) fails instead of
 * being ignored. `where` names the options, as in `call options`.
 */
export function checkKnownKeys(where: string, options: object, known: readonly string[]): void {
  readOptions(where, options, known);
}

/**
 * {@linkcode checkKnownKeys}, returning a plain copy of `options` read once: a
 * getter or Proxy trap that throws fails here as `invalid_argument`, and later
 * checks and uses see the values that were checked.
 */
export function readOptions<T extends object>(where: string, options: T, known: readonly string[]): T {
  const copy = readRecord(where, options);
  const unknown = Object.keys(copy).filter((key) => !known.includes(key));
  if (unknown.length === 0) return copy;
  throw new BrainError(
    "invalid_argument",
    `unknown ${where} ${unknown.map((key) => JSON.stringify(key)).join(", ")}: the known ones are ${known.join(", ")}`,
  );
}

/**
 * A plain copy of the object `value`, its own properties read once: a value that
 * is no object, or a getter or Proxy trap that throws, fails as `invalid_argument`.
 */
export function readRecord<T extends object>(where: string, value: T): T {
  checkObject(where, value);
  try {
    return { ...value };
  } catch (error) {
    throw new BrainError("invalid_argument", `${where} cannot be read: ${errorText(error)}`);
  }
}

/**
 * A plain copy of the array `value`, its items read once: a value that is no
 * array, or a Proxy whose items cannot be read, fails as `invalid_argument`.
 */
export function readList(where: string, value: unknown): unknown[] {
  let copy: unknown[] | undefined;
  try {
    if (Array.isArray(value)) copy = [...value];
  } catch (error) {
    throw new BrainError("invalid_argument", `${where} cannot be read: ${errorText(error)}`);
  }
  if (!copy) throw new BrainError("invalid_argument", `${where} must be a list`);
  return copy;
}

/**
 * Every key of `T`, as a list for {@linkcode checkKnownKeys}. The argument
 * must name each key of `T` exactly once, so a new option that is not listed
 * fails to compile instead of being refused at run time.
 */
export function allKeys<T>(keys: { [K in keyof Required<T>]: true }): readonly string[] {
  return Object.freeze(Object.keys(keys));
}

/** `Array.isArray`, false for a revoked Proxy (whose check throws) rather than a TypeError. */
export function isList(value: unknown): value is unknown[] {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}

/** `value instanceof type`, false rather than a throw for a Proxy whose prototype trap throws. */
export function isInstance<T>(value: unknown, type: abstract new (...args: never[]) => T): value is T {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}
