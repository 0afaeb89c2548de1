import { BrainError } from "../outcome/errors.ts";
import { errorText } from "../util/error_text.ts";
import { isObject } from "../util/is_object.ts";
import { shownValue } from "../util/shown_value.ts";
import type { Lease, StoredLease } from "./lease.ts";
import { checkNodeUrl, type NodeBeat } from "./nodes.ts";
import { opens } from "./open_calls.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "./records.ts";
import { checkDense, corrupt, storedMeta, storedRecord } from "./stored_record.ts";

/*
 * The answers of an application's journal, checked to be what a store can
 * answer, each read once into a frozen plain copy: a getter or Proxy that
 * throws, a record of no known kind, a sequence out of place, is
 * `journal_corrupt`, as the bytes of a damaged store are.
 */

/** The records an append of `bodies` answered: one per body, of its kind, numbered on from above `floor`. */
export function appendedRecords(
  answer: unknown,
  sessionId: string,
  bodies: readonly RecordBody[],
  floor: number,
): JournalRecord[] {
  const records = answeredRecords(answer, sessionId, "append");
  if (records.length !== bodies.length) {
    throw corruptAnswer("append", `${records.length} records for a commit of ${bodies.length}`, sessionId);
  }
  if (records.length === 0) return records;
  const first = records[0].sequence;
  if (first <= floor) {
    throw corrupt(sessionId, first, `was committed again: an earlier commit was given sequence ${floor}`);
  }
  checkDense(records, sessionId, first);
  records.forEach((record, index) => {
    if (record.kind !== bodies[index].kind) {
      throw corrupt(sessionId, record.sequence, `is a ${record.kind} record for a commit of a ${bodies[index].kind}`);
    }
  });
  return records;
}

/** The records a read from `from` (up to `limit`) answered: every record from `from` on, no more than `limit`. */
export function readRecords(answer: unknown, sessionId: string, from = 1, limit = Infinity): JournalRecord[] {
  const records = answeredRecords(answer, sessionId, "read");
  if (records.length > limit) {
    throw corruptAnswer("read", `${records.length} records, over its limit ${limit}`, sessionId);
  }
  checkDense(records, sessionId, from);
  return records;
}

/** The records `openCalls` answered: records that open calls, in sequence order. */
export function openCallRecords(answer: unknown, sessionId: string): JournalRecord[] {
  const records = answeredRecords(answer, sessionId, "openCalls");
  records.forEach((record, index) => {
    if (!opens(record)) throw corrupt(sessionId, record.sequence, `is a ${record.kind} record, which opens no call`);
    if (index > 0 && record.sequence <= records[index - 1].sequence) {
      throw corrupt(sessionId, record.sequence, "is out of sequence order among the open calls");
    }
  });
  return records;
}

/** One record a subscription yielded, which must be record `expected` of the session. */
export function followedRecord(answer: unknown, sessionId: string, expected: number): JournalRecord {
  const record = answeredRecord(answer, sessionId);
  if (record.sequence !== expected) {
    throw corrupt(sessionId, expected, `is missing: the subscription went on at ${record.sequence}`);
  }
  return record;
}

/** A session's head: a sequence, or 0. */
export function answeredHead(answer: unknown, sessionId: string): number {
  if (Number.isSafeInteger(answer) && (answer as number) >= 0) return answer as number;
  throw corruptAnswer("head", `${shownValue(answer)}, which is no sequence`, sessionId);
}

/** Session `id`'s metadata, or undefined. */
export function answeredMeta(answer: unknown, id: string): SessionMeta | undefined {
  if (answer === undefined) return undefined;
  const meta = copiedMeta(answer, id);
  if (meta.id !== id) throw corruptAnswer("getSession", `the metadata of session ${shownValue(meta.id)}`, id);
  return meta;
}

/** Every session's metadata. */
export function answeredMetas(answer: unknown): SessionMeta[] {
  return answeredList(answer, "listSessions").map((meta) => copiedMeta(meta, "listed"));
}

/** The ids of stranded sessions. */
export function answeredIds(answer: unknown): string[] {
  const ids = answeredList(answer, "stranded");
  if (!ids.every((id) => typeof id === "string")) throw corruptAnswer("stranded", "a session id that is no string");
  return ids as string[];
}

/** The nodes alive: each a node id, an http(s) or ws(s) URL and an expiry. */
export function answeredNodes(answer: unknown): NodeBeat[] {
  return answeredList(answer, "nodes").map((beat) => {
    const { node, url, expiresAt } = copied(beat, "nodes");
    try {
      if (typeof node !== "string" || typeof expiresAt !== "number") throw new Error("a node id and expiry");
      checkNodeUrl(url as string);
    } catch (error) {
      throw corruptAnswer("nodes", `a heartbeat that is no node's: ${errorText(error)}`);
    }
    return Object.freeze({ node, url, expiresAt }) as NodeBeat;
  });
}

/** A lease as a store keeps it, or undefined. */
export function answeredHolder(answer: unknown, sessionId: string): StoredLease | undefined {
  if (answer === undefined) return undefined;
  const { owner, token, expiresAt } = copied(answer, "holder", sessionId);
  if (typeof owner !== "string" || typeof token !== "number" || typeof expiresAt !== "number") {
    throw corruptAnswer("holder", "no lease: an owner, a token and an expiry", sessionId);
  }
  return Object.freeze({ owner, token, expiresAt });
}

/** The lease `method` gave `owner` of session `sessionId`. */
export function answeredLease(answer: unknown, method: string, sessionId: string, owner: string): Lease {
  const lease = copied(answer, method, sessionId);
  const { token, expiresAt, fence } = lease;
  if (lease.sessionId !== sessionId || lease.owner !== owner) {
    throw corruptAnswer(method, `a lease of another session or owner than ${owner}'s`, sessionId);
  }
  if (typeof token !== "number" || typeof expiresAt !== "number" || typeof fence !== "string") {
    throw corruptAnswer(method, "no lease: a token, an expiry and a fence", sessionId);
  }
  return Object.freeze({ sessionId, owner, token, expiresAt, fence });
}

function answeredRecords(answer: unknown, sessionId: string, method: string): JournalRecord[] {
  return answeredList(answer, method, sessionId).map((record) => answeredRecord(record, sessionId));
}

/** A record of session `sessionId`, copied as its JSON and checked as a store checks what it reads back. */
function answeredRecord(answer: unknown, sessionId: string): JournalRecord {
  const body = copied(answer, "a read", sessionId);
  const { sequence, at } = body;
  if (!Number.isSafeInteger(sequence) || (sequence as number) < 1) {
    throw corruptAnswer("a read", `a record numbered ${shownValue(sequence)}, which is no sequence`, sessionId);
  }
  if (body.sessionId !== sessionId) {
    throw corrupt(sessionId, sequence as number, `belongs to session ${shownValue(body.sessionId)}`);
  }
  return storedRecord(body, sessionId, sequence as number, at);
}

function copiedMeta(answer: unknown, id: string): SessionMeta {
  let text: string | undefined;
  try {
    text = JSON.stringify(answer);
  } catch (error) {
    throw corruptAnswer("a session lookup", `metadata that cannot be read: ${errorText(error)}`, id);
  }
  return storedMeta(text ?? "", id);
}

/** `answer` as a list, read once. */
function answeredList(answer: unknown, method: string, sessionId?: string): unknown[] {
  try {
    if (Array.isArray(answer)) return [...answer];
  } catch (error) {
    throw corruptAnswer(method, `a list that cannot be read: ${errorText(error)}`, sessionId);
  }
  throw corruptAnswer(method, `${shownValue(answer)}, not a list`, sessionId);
}

/** `answer`, an object, as a plain copy of its JSON. */
function copied(answer: unknown, method: string, sessionId?: string): Record<string, unknown> {
  let copy: unknown;
  try {
    copy = JSON.parse(JSON.stringify(answer) ?? "null");
  } catch (error) {
    throw corruptAnswer(method, `an object that cannot be read: ${errorText(error)}`, sessionId);
  }
  if (!isObject(copy)) throw corruptAnswer(method, `${shownValue(answer)}, not an object`, sessionId);
  return copy;
}

function corruptAnswer(method: string, what: string, sessionId?: string): BrainError {
  const about = sessionId === undefined ? "" : ` of session ${sessionId}`;
  return new BrainError("journal_corrupt", `the journal's ${method}${about} answered ${what}`, {
    ...(sessionId === undefined ? {} : { details: { sessionId } }),
  });
}
