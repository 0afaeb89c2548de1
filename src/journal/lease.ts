import { BrainError } from "../outcome/errors.ts";
import { errorText } from "../util/error_text.ts";
import { shownTime } from "../util/shown_time.ts";
import { shownValue } from "../util/shown_value.ts";

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
export function live(stored: StoredLease | undefined, now?: number): stored is StoredLease {
  return stored !== undefined && stored.expiresAt > (now ?? Date.now());
}

/** The error for taking a session another live owner holds. */
export function ownedError(sessionId: string, stored: Pick<StoredLease, "owner" | "expiresAt">): BrainError {
  return new BrainError(
    "session_owned",
    `session ${sessionId} is owned by ${stored.owner} until ${shownTime(stored.expiresAt)}`,
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
export function checkAcquire(options: AcquireOptions): void {
  let owner: unknown, ttlMs: unknown;
  try {
    ({ owner, ttlMs } = options);
  } catch (error) {
    throw new BrainError("invalid_argument", `lease options cannot be read: ${errorText(error)}`);
  }
  checkNodeId("a lease's owner", owner);
  if (typeof ttlMs !== "number" || !(ttlMs > 0 && ttlMs <= MAX_LEASE_MS)) {
    throw new BrainError(
      "invalid_argument",
      `a lease TTL must be a positive number of ms up to ${MAX_LEASE_MS}, got ${shownValue(ttlMs)}`,
    );
  }
}

/** The longest owner (node) id a journal keeps: Brain's own are UUIDs. */
const MAX_NODE_ID_LENGTH = 256;

/** Throws `invalid_argument` unless `id` is an owner (node) id: 1 to 256 characters, no NUL (which PostgreSQL refuses). */
export function checkNodeId(what: string, id: unknown): asserts id is string {
  if (typeof id !== "string" || id.length === 0 || id.length > MAX_NODE_ID_LENGTH || id.includes("\0")) {
    throw new BrainError(
      "invalid_argument",
      `${what} is an id of 1 to ${MAX_NODE_ID_LENGTH} characters without NUL, got ${shownValue(id)}`,
    );
  }
}

/**
 * Throws `invalid_argument` unless `lease` reads as a lease a journal issued: an
 * object with a string session id, owner and fence and an integer token (a
 * Proxy or a getter that throws included), before any store looks at it.
 */
export function checkLease(lease: unknown): asserts lease is Lease {
  let sessionId: unknown, owner: unknown, token: unknown, fence: unknown;
  try {
    if (typeof lease === "object" && lease !== null) ({ sessionId, owner, token, fence } = lease as Lease);
  } catch (error) {
    throw new BrainError("invalid_argument", `a lease cannot be read: ${errorText(error)}`);
  }
  if (
    typeof sessionId !== "string" || typeof owner !== "string" || !Number.isSafeInteger(token) ||
    typeof fence !== "string"
  ) {
    throw new BrainError("invalid_argument", "a lease is one a journal's acquire or renew returned");
  }
}

/** The lease of an append's options, read once and checked (see {@linkcode checkLease}); `undefined` for none. */
export function leaseOption(options: AppendOptions | undefined): Lease | undefined {
  if (options === undefined) return undefined;
  let lease: unknown;
  try {
    if (typeof options !== "object" || options === null) throw new TypeError(`got ${shownValue(options)}`);
    lease = options.lease;
  } catch (error) {
    throw new BrainError("invalid_argument", `append options cannot be read: ${errorText(error)}`);
  }
  if (lease !== undefined) checkLease(lease);
  return lease as Lease | undefined;
}
