import { BrainError } from "../outcome/errors.ts";
import { isInstance, readOptions } from "../outcome/known_keys.ts";
import { errorText } from "../util/error_text.ts";
import type { ReadOptions, SubscribeOptions } from "./journal.ts";

/**
 * Returns `options`, read once into a plain copy, when they name a range of records:
 * `from` a sequence (an integer from 1), `limit` a count (an integer from 0), and a
 * `signal` an AbortSignal. Anything else (a getter or Proxy that throws too) throws
 * `invalid_argument` naming the option, so a bad range is refused before any read.
 * `also` are further keys the options may carry (`signal` for `records`).
 */
export function checkReadOptions<T extends ReadOptions>(where: string, options: T, also: readonly string[] = []): T {
  const read = readOptions(where, options, ["from", "limit", ...also]);
  checkRange(where, read);
  return read;
}

/**
 * The range `options` name, `from`, `limit` and `signal` read once and checked as
 * {@linkcode checkReadOptions} checks them; other keys are not looked at (a
 * store is given the frames and options of its callers as they are).
 */
export function checkRange(
  where: string,
  options: ReadOptions & { signal?: AbortSignal },
): SubscribeOptions & ReadOptions {
  let from: unknown, limit: unknown, signal: unknown;
  try {
    ({ from, limit, signal } = options);
  } catch (error) {
    throw new BrainError("invalid_argument", `${where} cannot be read: ${errorText(error)}`);
  }
  if (from !== undefined && !(Number.isSafeInteger(from) && (from as number) >= 1)) {
    throw new BrainError(
      "invalid_argument",
      `${where}: from is a record sequence, an integer from 1, got ${shown(from)}`,
    );
  }
  if (limit !== undefined && !(Number.isSafeInteger(limit) && (limit as number) >= 0)) {
    throw new BrainError(
      "invalid_argument",
      `${where}: limit is a count of records, an integer from 0, got ${shown(limit)}`,
    );
  }
  if (signal !== undefined && !isInstance(signal, AbortSignal)) {
    throw new BrainError("invalid_argument", `${where}: signal must be an AbortSignal`);
  }
  return {
    ...(from === undefined ? {} : { from: from as number }),
    ...(limit === undefined ? {} : { limit: limit as number }),
    ...(signal === undefined ? {} : { signal: signal as AbortSignal }),
  };
}

function shown(value: unknown): string {
  return typeof value === "number" ? String(value) : typeof value === "string" ? JSON.stringify(value) : typeof value;
}
