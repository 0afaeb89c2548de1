import { BrainError } from "./errors.ts";

/**
 * Returns `value` when it is a non-null object (and not an array); otherwise
 * throws `invalid_argument` naming `where`, so a public function given nothing
 * or the wrong thing fails with a stable code instead of a `TypeError`.
 */
export function checkObject<T>(where: string, value: T): T {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    const got = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
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
  checkObject(where, options);
  const unknown = Object.keys(options).filter((key) => !known.includes(key));
  if (unknown.length === 0) return;
  throw new BrainError(
    "invalid_argument",
    `unknown ${where} ${unknown.map((key) => JSON.stringify(key)).join(", ")}: the known ones are ${known.join(", ")}`,
  );
}

/**
 * Every key of `T`, as a list for {@linkcode checkKnownKeys}. The argument
 * must name each key of `T` exactly once, so a new option that is not listed
 * fails to compile instead of being refused at run time.
 */
export function allKeys<T>(keys: { [K in keyof Required<T>]: true }): readonly string[] {
  return Object.freeze(Object.keys(keys));
}
