import { BrainError } from "../outcome/errors.ts";

/**
 * One owner's hold on a session. Only the holder of a session's live lease
 * writes to it: every append made with the lease is checked against the
 * session's current fence in the same atomic write, and fails `fenced` once
 * another owner has taken the session over.
 */
export interface Lease {
  /** The owned session. */
  readonly sessionId: string;
  /** Who holds it: one id per Brain (node). */
  readonly owner: string;
  /** The fencing token: greater for each new owner of the session. */
  readonly token: number;
  /** Until when (ms since the epoch) no one else may take the session over, unless renewed. */
  readonly expiresAt: number;
  /** What the store checks a commit against; opaque outside the journal that issued it. */
  readonly fence: string;
}

/** Options for taking a session's lease. */
export interface AcquireOptions {
  /** The owner's id, the same for every lease one Brain holds. */
  owner: string;
  /** How long the lease lasts without renewal. */
  ttlMs: number;
}

/** Options for one append. */
export interface AppendOptions {
  /** The writer's lease: the commit fails `fenced` unless it is still the session's current one. */
  lease?: Lease;
}

/** A lease as a store keeps it: `expiresAt` 0 once released. Tokens are kept after release so they only grow. */
export interface StoredLease {
  /** Who holds it: one id per Brain (node). */
  owner: string;
  /** Its fencing token. */
  token: number;
  /** Until when (ms since the epoch) it keeps others out, unless renewed; 0 once released. */
  expiresAt: number;
}

/** True while `stored` keeps others from taking its session. */
export function live(stored: StoredLease | undefined, now = Date.now()): stored is StoredLease {
  return stored !== undefined && stored.expiresAt > now;
}

/** The error for taking a session another live owner holds. */
export function ownedError(sessionId: string, stored: Pick<StoredLease, "owner" | "expiresAt">): BrainError {
  return new BrainError(
    "session_owned",
    `session ${sessionId} is owned by ${stored.owner} until ${new Date(stored.expiresAt).toISOString()}`,
    { details: { owner: stored.owner, expiresAt: stored.expiresAt } },
  );
}

/** The error for a commit or renewal with a lease the session no longer honours. */
export function fencedError(lease: Lease): BrainError {
  return new BrainError(
    "fenced",
    `session ${lease.sessionId}: lease ${lease.token} of ${lease.owner} was taken over; this node writes no more to it`,
    { details: { owner: lease.owner, token: lease.token } },
  );
}

/** The longest lease or heartbeat TTL, in ms: the longest wait of a timer (about 24.8 days). */
export const MAX_LEASE_MS = 2 ** 31 - 1;

/** Checks lease options; a TTL must be a positive number of milliseconds up to {@linkcode MAX_LEASE_MS}. */
export function checkAcquire({ owner, ttlMs }: AcquireOptions): void {
  if (typeof owner !== "string" || owner.length === 0) {
    throw new BrainError("invalid_argument", "a lease needs a non-empty owner id");
  }
  if (typeof ttlMs !== "number" || !(ttlMs > 0 && ttlMs <= MAX_LEASE_MS)) {
    throw new BrainError(
      "invalid_argument",
      `a lease TTL must be a positive number of ms up to ${MAX_LEASE_MS}, got ${ttlMs}`,
    );
  }
}
