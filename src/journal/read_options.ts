import { BrainError } from "../outcome/errors.ts";
import { isInstance, readOptions } from "../outcome/known_keys.ts";
import type { ReadOptions } from "./journal.ts";

/**
 * Returns `options`, read once into a plain copy, when they name a range of records:
 * `from` a sequence (an integer from 1), `limit` a count (an integer from 0), and a
 * `signal` an AbortSignal. Anything else (a getter or Proxy that throws too) throws
 * `invalid_argument` naming the option, so a bad range is refused before any read.
 * `also` are further keys the options may carry (`signal` for `records`).
 */
export function checkReadOptions<T extends ReadOptions>(where: string, options: T, also: readonly string[] = []): T {
  const read = readOptions(where, options, ["from", "limit", ...also]);
  const { from, limit } = read;
  const { signal } = read as { signal?: unknown };
  if (signal !== undefined && !isInstance(signal, AbortSignal)) {
    throw new BrainError("invalid_argument", `${where}: signal must be an AbortSignal`);
  }
  if (from !== undefined && !(Number.isSafeInteger(from) && from >= 1)) {
    throw new BrainError(
      "invalid_argument",
      `${where}: from is a record sequence, an integer from 1, got ${shown(from)}`,
    );
  }
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 0)) {
    throw new BrainError(
      "invalid_argument",
      `${where}: limit is a count of records, an integer from 0, got ${shown(limit)}`,
    );
  }
  return read;
}

function shown(value: unknown): string {
  return typeof value === "number" ? String(value) : typeof value === "string" ? JSON.stringify(value) : typeof value;
}
