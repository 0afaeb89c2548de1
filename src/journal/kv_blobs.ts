import { BrainError } from "../outcome/errors.ts";
import { CHUNKS_PER_WRITE, type Head, keys, type PendingBlob, split } from "./kv_codec.ts";
import { backoff, commitAtomic } from "./kv_write.ts";

/** Attempts to doom a blob while its writer keeps moving the session's head. */
const MAX_DOOM_ATTEMPTS = 100;

/** A large record's chunks, written ahead of its commit, and the marker that proves them still wanted. */
export interface WrittenBlob {
  stored: { chunks: string; count: number };
  /** The blob's pending marker as its writer left it; a sweep changes it before deleting a chunk. */
  marker: Deno.AtomicCheck;
}

/**
 * Writes `bytes` as chunks under a new blob id with its pending marker, in
 * batches. Each batch after the first commits only while the marker is as the
 * first batch left it, so no chunk is written once a sweep has begun on the blob.
 */
export async function writeBlob(kv: Deno.Kv, sessionId: string, bytes: Uint8Array): Promise<WrittenBlob> {
  const blob = crypto.randomUUID();
  const chunks = split(bytes);
  const markerKey = keys.pending(sessionId, blob);
  let marker: Deno.AtomicCheck | undefined;
  for (let first = 0; first < chunks.length; first += CHUNKS_PER_WRITE) {
    const result = await commitAtomic(kv, (op) => {
      if (marker) op.check(marker);
      else op.set(markerKey, { at: Date.now() } satisfies PendingBlob);
      chunks.slice(first, first + CHUNKS_PER_WRITE).forEach((chunk, offset) =>
        op.set(keys.chunk(sessionId, blob, first + offset), chunk)
      );
    });
    if (!result.ok) throw sweptError(sessionId);
    marker ??= { key: markerKey, versionstamp: result.versionstamp };
  }
  return { stored: { chunks: blob, count: chunks.length }, marker: marker! };
}

/**
 * Deletes a blob that was never committed. It first dooms the marker in a
 * commit that also rewrites the session's head, so a commit that would refer
 * to the blob fails its head check and, retried, finds the blob gone; then
 * deletes the chunks and last the marker, so a sweep cut short leaves the
 * doomed marker for the next one.
 */
export async function dropBlob(kv: Deno.Kv, sessionId: string, blob: string): Promise<void> {
  await doom(kv, sessionId, blob);
  const doomed: Deno.KvKey[] = [];
  for await (const entry of kv.list({ prefix: keys.chunks(sessionId, blob) })) doomed.push(entry.key);
  doomed.push(keys.pending(sessionId, blob));
  for (let first = 0; first < doomed.length; first += 500) {
    await commitAtomic(kv, (op) => doomed.slice(first, first + 500).forEach((key) => op.delete(key)));
  }
}

async function doom(kv: Deno.Kv, sessionId: string, blob: string): Promise<void> {
  for (let attempt = 0; attempt < MAX_DOOM_ATTEMPTS; attempt++) {
    const [marker, head] = await kv.getMany<[PendingBlob, Head]>([
      keys.pending(sessionId, blob),
      keys.head(sessionId),
    ]);
    if (marker.value === null || marker.value.doomed) return;
    const result = await commitAtomic(kv, (op) => {
      op.check(marker, head).set(marker.key, { ...marker.value, doomed: true } satisfies PendingBlob);
      if (head.value !== null) op.set(head.key, head.value);
    });
    if (result.ok) return;
    await backoff(attempt);
  }
  throw new BrainError("journal_conflict", `session ${sessionId}: its head kept changing while a blob was swept`);
}

/**
 * The markers among `markers` whose blobs a sweep has begun deleting, read in
 * one snapshot with the session's head; undefined when the head is no longer
 * at `headVersionstamp` (the commit this guards will fail and be retried).
 */
export async function sweptMarkers(
  kv: Deno.Kv,
  sessionId: string,
  headVersionstamp: string | null,
  markers: Deno.AtomicCheck[],
): Promise<Set<Deno.AtomicCheck> | undefined> {
  const swept = new Set<Deno.AtomicCheck>();
  for (let first = 0; first < markers.length; first += 9) {
    const some = markers.slice(first, first + 9);
    const [head, ...entries] = await kv.getMany([keys.head(sessionId), ...some.map((marker) => marker.key)]);
    if (head.versionstamp !== headVersionstamp) return undefined;
    entries.forEach((entry, index) => entry.versionstamp !== some[index].versionstamp && swept.add(some[index]));
  }
  return swept;
}

/** Why an append whose large record was swept before it committed fails. */
export function sweptError(sessionId: string): BrainError {
  return new BrainError(
    "journal_conflict",
    `session ${sessionId}: a large record's chunks were swept before it committed (another writer took the session, ` +
      "or its lease lapsed); nothing of the append was committed",
  );
}
