import { BrainError } from "../outcome/errors.ts";
import { allKeys, isInstance, readOptions } from "../outcome/known_keys.ts";
import type { ReadOptions, SubscribeOptions } from "./journal.ts";

const READ_OPTIONS = allKeys<ReadOptions>({ from: true, limit: true });
const FOLLOW_OPTIONS = allKeys<SubscribeOptions>({ from: true, signal: true });

/**
 * The options of reading a session's records, read once and checked: `from` a
 * sequence and `limit` a count, whole non-negative numbers. Throws `invalid_argument`.
 */
export function checkReadOptions(options: ReadOptions | undefined): ReadOptions | undefined {
  if (options === undefined) return undefined;
  const read = readOptions("read options", options, READ_OPTIONS);
  checkCount("from", read.from);
  checkCount("limit", read.limit);
  return read;
}

/** The options of following a session's records, read once and checked like {@linkcode checkReadOptions}'. */
export function checkFollowOptions(options: SubscribeOptions | undefined): SubscribeOptions | undefined {
  if (options === undefined) return undefined;
  const read = readOptions("records options", options, FOLLOW_OPTIONS);
  checkCount("from", read.from);
  if (read.signal !== undefined && !isInstance(read.signal, AbortSignal)) {
    throw new BrainError("invalid_argument", "records options: signal must be an AbortSignal");
  }
  return read;
}

function checkCount(name: string, value: unknown): void {
  if (value === undefined || (typeof value === "number" && Number.isSafeInteger(value) && value >= 0)) return;
  throw new BrainError(
    "invalid_argument",
    `read options: ${name} must be a whole number >= 0, got ${typeof value === "number" ? value : typeof value}`,
  );
}
