import { BrainError } from "./errors.ts";

/**
 * Throws `invalid_argument` naming every key of `options` that `known` lacks,
 * so a misspelt option (`{ timeout }` for `{ timeoutMs }`) fails instead of
 * being ignored. `where` names the options, as in `call options`.
 */
export function checkKnownKeys(where: string, options: object, known: readonly string[]): void {
  if (options === null || typeof options !== "object") {
    throw new BrainError(
      "invalid_argument",
      `${where} must be an object, got ${options === null ? "null" : typeof options}`,
    );
  }
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
