import { BrainError } from "../outcome/errors.ts";
import { allKeys, readOptions } from "../outcome/known_keys.ts";
import type { SessionMeta } from "./records.ts";

/**
 * Options for creating a session in a journal.
 *
 * @example
 * ```ts
 * import { MemoryJournal } from "@aexhq/brain/journal";
 * const journal = new MemoryJournal();
 * const meta = { id: "s1", createdAt: Date.now(), tools: [], host: { id: "app", tokenHash: "..." } };
 * await journal.createSession(meta, { maxHostSessions: 1 });
 * await journal.createSession({ ...meta, id: "s2" }, { maxHostSessions: 1 }).catch((error) => {
 *   console.log(error.code); // "limit_exceeded"
 * });
 * ```
 */
export interface SessionCreateOptions {
  /**
   * The most sessions the journal may hold for the host the new session's
   * `meta.host` names, counted atomically with the creation: a creation past it
   * fails `limit_exceeded` and stores nothing, however many processes create at
   * once. A session counts under the host its metadata names (which an update
   * must keep) until it is deleted, whether or not it was created with a limit.
   */
  maxHostSessions?: number;
}

const KNOWN = allKeys<SessionCreateOptions>({ maxHostSessions: true });

/** The host id a session's metadata names, if any: the key its sessions are counted under. */
export function hostOf(meta: SessionMeta): string | undefined {
  const host: unknown = (meta as Partial<SessionMeta> | null)?.host;
  if (typeof host !== "object" || host === null) return undefined;
  const id = (host as { id?: unknown }).id;
  return typeof id === "string" ? id : undefined;
}

/** The checked `maxHostSessions` of `options`: a positive safe integer, or undefined for no limit. */
export function maxHostSessions(options: SessionCreateOptions | undefined): number | undefined {
  if (options === undefined) return undefined;
  const { maxHostSessions: max } = readOptions("session create options", options, KNOWN);
  if (max === undefined) return undefined;
  if (!Number.isSafeInteger(max) || max <= 0) {
    throw new BrainError("invalid_argument", `maxHostSessions must be a positive integer, got ${max}`);
  }
  return max;
}

/** The error for one session more than `max` of host `host`. */
export function hostLimitError(host: string, max: number): BrainError {
  return new BrainError("limit_exceeded", `host ${host} has ${max} sessions, its most`, {
    details: { limit: "maxHostSessions", value: max },
  });
}
