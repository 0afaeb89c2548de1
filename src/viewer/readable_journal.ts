import type { Journal } from "../journal/journal.ts";

/**
 * The reading half of a {@linkcode Journal}: all a viewer ever calls, so it can
 * never append, create, change or delete anything, nor end a call.
 */
export type ReadableJournal = Pick<
  Journal,
  "read" | "head" | "openCalls" | "subscribe" | "getSession" | "listSessions"
>;
