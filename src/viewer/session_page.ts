import type { SessionMeta } from "../journal/records.ts";
import { BrainError } from "../outcome/errors.ts";

/** Sessions one list page holds unless the request asks for fewer. */
export const SESSION_PAGE_SIZE = 50;
/** Records one page holds unless the request asks for fewer. */
export const RECORD_PAGE_SIZE = 200;
/** The most a request may ask one page to hold. */
export const MAX_PAGE_SIZE = 1000;

/** One page of sessions, newest first, and the cursor of the next page when there is one. */
export interface SessionPage {
  /** The page's sessions. */
  sessions: SessionMeta[];
  /** Pass as `cursor` for the next page; absent on the last page. */
  next?: string;
}

/**
 * Pages `sessions` newest first (ties by id). `cursor` is a previous page's
 * `next`: the page starts after the session it names, so sessions created
 * meanwhile never shift a page.
 */
export function pageSessions(sessions: SessionMeta[], limit: number, cursor?: string): SessionPage {
  const sorted = sessions.toSorted((a, b) => b.createdAt - a.createdAt || compare(a.id, b.id));
  const after = cursor === undefined ? undefined : parseCursor(cursor);
  const start = after === undefined
    ? 0
    : sorted.findIndex((meta) =>
      meta.createdAt < after.createdAt || (meta.createdAt === after.createdAt && meta.id > after.id)
    );
  const page = start < 0 ? [] : sorted.slice(start, start + limit);
  const last = page.at(-1);
  return start >= 0 && start + limit < sorted.length && last
    ? { sessions: page, next: `${last.createdAt}:${last.id}` }
    : { sessions: page };
}

/** Parses a page size query parameter: an integer from 1 to {@linkcode MAX_PAGE_SIZE}, else `fallback` when absent. */
export function pageSize(raw: string | undefined, fallback: number): number {
  return integerParameter("limit", raw, 1, MAX_PAGE_SIZE) ?? fallback;
}

/** Parses an integer query parameter or header in `[min, max]`; undefined when absent, `invalid_argument` when malformed. */
export function integerParameter(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  const value = /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= min && value <= max)) {
    throw new BrainError(
      "invalid_argument",
      `${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

function parseCursor(cursor: string): { createdAt: number; id: string } {
  const colon = cursor.indexOf(":");
  const createdAt = colon > 0 && /^\d{1,16}$/.test(cursor.slice(0, colon)) ? Number(cursor.slice(0, colon)) : NaN;
  if (!Number.isSafeInteger(createdAt)) {
    throw new BrainError("invalid_argument", `cursor must be a page's next value, got ${JSON.stringify(cursor)}`);
  }
  return { createdAt, id: cursor.slice(colon + 1) };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
