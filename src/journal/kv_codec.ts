import { BrainError } from "../outcome/errors.ts";
import { utf8Length } from "../util/utf8.ts";
import type { StoredLease } from "./lease.ts";
import { hostOf } from "./host_sessions.ts";
import type { JournalRecord, RecordBody, SessionMeta } from "./records.ts";
import { parseStored, storedRecord } from "./stored_record.ts";

/** Deno KV refuses values above 64 KiB; a record larger than this is stored in chunks. */
export const INLINE_MAX = 60_000;
/** Bytes per chunk of a large record. */
export const CHUNK_SIZE = 60_000;
/** Chunks written per atomic operation, well under its 800 KiB mutation limit. */
export const CHUNKS_PER_WRITE = 10;

/** A record as KV stores it: its JSON text inline, or the id and count of its chunks. */
export type StoredRecord = Uint8Array | { chunks: string; count: number };

/**
 * The KV keys of one journal. Records and open calls live under the session's
 * epoch, new for each created session, so leftovers of a deleted session with
 * the same id are never read; chunks are named by a random blob id. A
 * session's head and open calls sort right after its records (`true` sorts
 * after every number and string), so a commit's writes land on one page of
 * the file rather than three.
 */
export const keys = {
  session: (id: string): Deno.KvKey => ["session", id],
  sessions: (): Deno.KvKey => ["session"],
  head: (id: string): Deno.KvKey => ["record", id, true],
  records: (id: string, epoch: string): Deno.KvKey => ["record", id, epoch],
  record: (id: string, epoch: string, sequence: number): Deno.KvKey => ["record", id, epoch, sequence],
  openCalls: (id: string, epoch: string): Deno.KvKey => ["record", id, epoch, true],
  openCall: (id: string, epoch: string, call: number): Deno.KvKey => ["record", id, epoch, true, call],
  /** Where files written before heads and open calls moved next to the records kept them; opening moves them. */
  earlierHeads: (): Deno.KvKey => ["head"],
  earlierOpenCalls: (): Deno.KvKey => ["open"],
  earlierOpenCallsOf: (id: string, epoch: string): Deno.KvKey => ["open", id, epoch],
  chunks: (id: string, blob: string): Deno.KvKey => ["chunk", id, blob],
  chunk: (id: string, blob: string, index: number): Deno.KvKey => ["chunk", id, blob, index],
  /** Marks a blob whose chunks are written but whose record is not committed yet; the commit deletes it. */
  pending: (id: string, blob: string): Deno.KvKey => ["pending", id, blob],
  pendings: (id?: string): Deno.KvKey => id === undefined ? ["pending"] : ["pending", id],
  /** The session's current owner and fencing token; rewritten only when ownership changes. */
  fence: (id: string): Deno.KvKey => ["fence", id],
  /** Until when the session's owner holds it; rewritten on each renewal. */
  lease: (id: string): Deno.KvKey => ["lease", id],
  leases: (): Deno.KvKey => ["lease"],
  /** A Brain node's heartbeat. */
  node: (id: string): Deno.KvKey => ["node", id],
  nodes: (): Deno.KvKey => ["node"],
  /**
   * Marks a deleted incarnation of a session whose records, open calls and
   * chunks are not all removed yet: set in the commit that deletes its head,
   * removed once they are, so a delete cut short is finished on the next open.
   */
  doomed: (id: string, epoch: string): Deno.KvKey => ["doomed", id, epoch],
  doomedAll: (): Deno.KvKey => ["doomed"],
  /** How many sessions name host `host`; kept by every create and delete once {@linkcode keys.hostsCounted} is set. */
  hostSessions: (host: string): Deno.KvKey => ["host_sessions", host],
  /** Set once every host's sessions were counted into its key: from then on creates and deletes keep the counts. */
  hostsCounted: (): Deno.KvKey => ["hosts_counted"],
};

/** What the fence key holds. */
export interface Fence {
  owner: string;
  token: number;
}

/** A fence key's value as journals write it: an owner and a fencing token. */
function isFence(value: unknown): value is Fence {
  if (typeof value !== "object" || value === null) return false;
  const { owner, token } = value as Partial<Fence>;
  return typeof owner === "string" && Number.isSafeInteger(token) && token! >= 0;
}

/** A lease key's expiry as journals write it: a time in ms, 0 once released. */
export function isExpiry(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

/**
 * The lease a session's fence and lease keys hold together (see
 * {@linkcode keys.fence}), undefined while either is missing; `journal_corrupt`
 * when either holds what no journal writes.
 */
export function storedLeaseOf(sessionId: string, fence: unknown, lease: unknown): StoredLease | undefined {
  const expiresAt = lease === null ? undefined : (lease as { expiresAt?: unknown }).expiresAt;
  if ((fence !== null && !isFence(fence)) || (lease !== null && !isExpiry(expiresAt))) {
    throw new BrainError("journal_corrupt", `session ${sessionId}: its lease is no owner, token and expiry`, {
      details: { sessionId },
    });
  }
  if (fence === null || lease === null) return undefined;
  const { owner, token } = fence as Fence;
  return { owner, token, expiresAt: expiresAt as number };
}

/** What the pending key of a blob holds: when its chunks were written, and whether a sweep has begun on them. */
export interface PendingBlob {
  at: number;
  doomed?: true;
}

/** Bytes of `key` in Deno KV's encoding, which its 80 KiB limit on the keys of one commit counts. */
export function keySize(key: Deno.KvKey): number {
  let size = 0;
  for (const part of key) {
    size += typeof part === "string" ? utf8Length(part) + 2 : 9;
  }
  return size;
}

/** What the head key holds, as JSON: the last committed sequence and the epoch its records are keyed by. */
export interface Head {
  sequence: number;
  epoch: string;
}

/** What an open call's key holds: `{}` as JSON, so every value under a session's `record` keys is JSON text. */
export const OPEN_MARK: Uint8Array = new TextEncoder().encode("{}");

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A head as its key holds it. */
export function encodeHead(head: Head): Uint8Array {
  return encodeJson({ sequence: head.sequence, epoch: head.epoch });
}

/** The head a head key holds, or undefined for a value that is no head (a hostile edit, or no session). */
export function decodeHead(value: unknown): Head | undefined {
  if (!(value instanceof Uint8Array)) return undefined;
  let head: unknown;
  try {
    head = decodeJson(value);
  } catch {
    return undefined;
  }
  return isHead(head) ? head : undefined;
}

/** True for a sequence and an epoch: the fields of a head, however it was stored. */
export function isHead(value: unknown): value is Head {
  if (typeof value !== "object" || value === null) return false;
  const { sequence, epoch } = value as Partial<Head>;
  return typeof sequence === "number" && Number.isSafeInteger(sequence) && sequence >= 0 && typeof epoch === "string";
}

/** JSON text as UTF-8 bytes. */
export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** The value of UTF-8 JSON bytes. */
export function decodeJson<T>(bytes: Uint8Array): T {
  return JSON.parse(decoder.decode(bytes)) as T;
}

/**
 * The host a stored session's metadata names, if any; none for metadata that
 * cannot be read, so a damaged session can still be deleted.
 */
export function storedHost(stored: unknown): string | undefined {
  try {
    return hostOf(decodeJson<SessionMeta>(stored as Uint8Array));
  } catch {
    return undefined;
  }
}

/**
 * A body and its commit time as stored. Session and sequence come from the key,
 * so the stored bytes do not depend on which sequence a retried commit takes.
 */
export function encodeBody(body: RecordBody, at: number): Uint8Array {
  return encodeJson({ ...body, at });
}

/**
 * Rebuilds a committed record from its stored bytes and key, deep-frozen;
 * `journal_corrupt` when the bytes hold no record (see {@linkcode storedRecord}).
 */
export function decodeRecord(bytes: Uint8Array, sessionId: string, sequence: number): JournalRecord {
  const { at, ...body } = parseStored(decoder.decode(bytes), sessionId, sequence);
  return storedRecord(body, sessionId, sequence, at);
}

/** Splits bytes into chunks KV accepts. */
export function split(bytes: Uint8Array): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let start = 0; start < bytes.byteLength; start += CHUNK_SIZE) {
    chunks.push(bytes.subarray(start, start + CHUNK_SIZE));
  }
  return chunks;
}

/** Joins chunks back into one byte array. */
export function join(chunks: Uint8Array[]): Uint8Array {
  const bytes = new Uint8Array(chunks.reduce((total, chunk) => total + chunk.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
