import { BrainError } from "../../outcome/errors.ts";
import { shownValue } from "../../util/shown_value.ts";

/** What one Brain server lets its hosts hold at once; over a limit the request fails with `limit_exceeded`. */
export interface ServerLimits {
  /** Host ids the server keeps registered; a new id past it is refused (HTTP 429) before any upgrade. */
  maxHosts: number;
  /** Sessions one host may have placed in it; `sessions.create` past it fails. */
  maxSessionsPerHost: number;
  /** Calls one host may have started and not yet ended; `call`/`start` past it fails before any intent is journaled. */
  maxCallsPerHost: number;
  /** Session handles one host may hold open (`create` and `get`); one more fails. */
  maxHandlesPerHost: number;
  /** Record streams (`records()`) and waits for a call's end one host may follow at once; one more fails. */
  maxStreamsPerHost: number;
  /** Distinct Components one host may upload; the server keeps their bytes in memory. */
  maxUploadsPerHost: number;
  /** Bytes of one WebSocket frame from a host; a larger frame is answered `payload_too_large` and not parsed. */
  maxFrameBytes: number;
  /**
   * Bytes sent to a host and not yet read by it; when more is to be sent past it, the host is
   * taken as gone (its socket closed 1008, its open calls ended `unknown`), so a host that never
   * reads cannot grow the server's memory.
   */
  maxUnreadBytes: number;
}

/**
 * The default {@linkcode ServerLimits}: 1,000 hosts; per host 10,000 sessions,
 * 1,000 calls in flight, 10,000 open handles, 1,000 record streams and 256 uploaded
 * Components; frames up to 16 MiB, and up to 64 MiB sent to a host it has not read.
 *
 * @example
 * ```ts
 * import { SERVER_LIMITS } from "@aexhq/brain/server";
 * console.log(SERVER_LIMITS.maxCallsPerHost); // 1000
 * ```
 */
export const SERVER_LIMITS: Readonly<ServerLimits> = Object.freeze({
  maxHosts: 1_000,
  maxSessionsPerHost: 10_000,
  maxCallsPerHost: 1_000,
  maxHandlesPerHost: 10_000,
  maxStreamsPerHost: 1_000,
  maxUploadsPerHost: 256,
  maxFrameBytes: 16 * 1024 * 1024,
  maxUnreadBytes: 64 * 1024 * 1024,
});

/** `given` over the defaults; throws `invalid_argument` for a limit that is not a positive integer. */
export function serverLimits(given: Partial<ServerLimits> = {}): ServerLimits {
  const limits = { ...SERVER_LIMITS, ...given };
  for (const [name, value] of Object.entries(limits)) {
    if (!Object.hasOwn(SERVER_LIMITS, name)) throw new BrainError("invalid_argument", `unknown server limit ${name}`);
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new BrainError(
        "invalid_argument",
        `server limit ${name} must be a positive integer, got ${shownValue(value)}`,
      );
    }
  }
  return limits;
}

/** The `limit_exceeded` error for `limit`, naming how to raise it. */
export function overLimit(limit: keyof ServerLimits, value: number, what: string): BrainError {
  return new BrainError("limit_exceeded", `${what}: this server's ${limit} is ${value}`, {
    details: { limit, value },
  });
}
