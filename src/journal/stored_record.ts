import { BrainError } from "../outcome/errors.ts";
import { MAX_JSON_DEPTH } from "../outcome/json.ts";
import { errorText } from "../util/error_text.ts";
import { checkBodies, metaProblem } from "./frozen_record.ts";
import type { JournalRecord, SessionMeta } from "./records.ts";
import { isObject } from "../util/is_object.ts";

/**
 * The stored JSON text of record `sequence` as an object; `journal_corrupt`
 * when it is not one (the store's data was edited or damaged: no retry reads
 * it, and no caller's argument caused it).
 */
export function parseStored(text: string, sessionId: string, sequence: number): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw corrupt(sessionId, sequence, `is not JSON: ${errorText(error)}`);
  }
  if (!isObject(body)) throw corrupt(sessionId, sequence, "is not a JSON object");
  return body;
}

/**
 * The record a store read back: `body` with its session, sequence and commit
 * time, deep-frozen, once checked to be what every store commits (a known
 * kind, a call's end naming its call by a number, a commit time, JSON no
 * deeper than a record may nest); `journal_corrupt` otherwise.
 */
export function storedRecord(
  body: Record<string, unknown>,
  sessionId: string,
  sequence: number,
  at: unknown,
): JournalRecord {
  try {
    checkBodies([body]);
  } catch (error) {
    throw corrupt(sessionId, sequence, `holds no record a store commits: ${errorText(error)}`);
  }
  if (typeof at !== "number" || !Number.isFinite(at)) throw corrupt(sessionId, sequence, "has no commit time");
  const record = { ...body, sessionId, sequence, at };
  if (!frozenWithin(record, MAX_JSON_DEPTH + 1)) {
    throw corrupt(sessionId, sequence, `nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return record as unknown as JournalRecord;
}

/**
 * Session `sessionId`'s metadata from its stored JSON text, deep-frozen, once
 * checked as a store checks it before keeping it (see `metaProblem`);
 * `journal_corrupt` otherwise, as for the store's bytes that are no text.
 */
export function storedMeta(text: unknown, sessionId: string): SessionMeta {
  let meta: unknown;
  try {
    meta = JSON.parse(typeof text === "string" ? text : decoder.decode(text as Uint8Array));
  } catch (error) {
    throw corruptMeta(sessionId, `is not JSON: ${errorText(error)}`);
  }
  const problem = metaProblem(meta);
  if (problem !== undefined) throw corruptMeta(sessionId, `is no session metadata: it ${problem}`);
  if (!frozenWithin(meta as object, MAX_JSON_DEPTH)) {
    throw corruptMeta(sessionId, `nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return meta as SessionMeta;
}

function corruptMeta(sessionId: string, what: string): BrainError {
  return new BrainError("journal_corrupt", `session ${sessionId}: its stored metadata ${what}`, {
    details: { sessionId },
  });
}

const decoder = new TextDecoder();

/**
 * Throws `journal_corrupt` unless a read from `from` got the records from
 * there on with no sequence missing, through sequence `through` when given
 * (the session's head, for a read that no limit cut short).
 */
export function checkDense(records: readonly JournalRecord[], sessionId: string, from: number, through?: number): void {
  for (let index = 0; index < records.length; index++) {
    if (records[index].sequence !== from + index) {
      throw corrupt(sessionId, from + index, "is missing: the records go on at a later sequence");
    }
  }
  const next = from + records.length;
  if (through !== undefined && next <= through) {
    throw corrupt(sessionId, next, `is missing: the session's head is at ${through}`);
  }
}

/** The `journal_corrupt` error for record `sequence` of a session, saying what is wrong with it. */
export function corrupt(sessionId: string, sequence: number, what: string): BrainError {
  return new BrainError("journal_corrupt", `session ${sessionId}: record ${sequence} ${what}`, {
    details: { sessionId, sequence },
  });
}

/** Deep-freezes `value` unless it nests deeper than `maxDepth` levels; false then. Nothing recurses. */
function frozenWithin(value: object, maxDepth: number): boolean {
  const pending: unknown[] = [value];
  const depths: number[] = [0];
  while (pending.length > 0) {
    const next = pending.pop(), depth = depths.pop()!;
    if (typeof next !== "object" || next === null) continue;
    if (depth > maxDepth) return false;
    Object.freeze(next);
    for (const child of Object.values(next)) {
      if (typeof child !== "object" || child === null) continue;
      pending.push(child);
      depths.push(depth + 1);
    }
  }
  return true;
}
