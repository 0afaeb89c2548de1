import { checkNodeId, MAX_LEASE_MS } from "./lease.ts";
import { BrainError } from "../outcome/errors.ts";
import { shownValue } from "../util/shown_value.ts";

/**
 * A Brain node's heartbeat as its journal keeps it: where the node serves
 * hosts, and until when it counts as alive. Nodes beat in the store they
 * share; one that stops beating ages out once `expiresAt` passed.
 */
export interface NodeBeat {
  /** The node's id: the `owner` of every lease it holds. */
  readonly node: string;
  /** The base URL hosts reach the node at, such as `http://127.0.0.1:8787`. */
  readonly url: string;
  /** Until when (ms since the epoch, by the store's clock) the node counts as alive unless it beats again. */
  readonly expiresAt: number;
}

/** The longest node URL: a WebSocket close reason, which sends a host to its node, holds 123 bytes. */
export const MAX_URL_BYTES = 123;

/** The most session ids one `stranded()` returns. */
export const STRANDED_MAX = 100;

/** Checks a heartbeat's arguments: a node id, an http(s) or ws(s) URL and a positive TTL. */
export function checkBeat(node: string, url: string, ttlMs: number): void {
  checkNodeId("a heartbeat's node", node);
  checkNodeUrl(url);
  if (typeof ttlMs !== "number" || !(ttlMs > 0 && ttlMs <= MAX_LEASE_MS)) {
    throw new BrainError(
      "invalid_argument",
      `a heartbeat's TTL must be a positive number of ms up to ${MAX_LEASE_MS}, got ${shownValue(ttlMs)}`,
    );
  }
}

/** Checks a node's URL: http(s) or ws(s), short enough for the close reason that sends hosts to it. */
export function checkNodeUrl(url: string): void {
  if (typeof url !== "string" || !/^(https?|wss?):\/\/[^\s]+$/.test(url) || !URL.canParse(url)) {
    throw new BrainError(
      "invalid_argument",
      `a heartbeat needs the node's http:// or ws:// URL, got ${shownValue(url)}`,
    );
  }
  if (new TextEncoder().encode(url).byteLength > MAX_URL_BYTES) {
    throw new BrainError(
      "invalid_argument",
      `a node's URL travels in a WebSocket close reason: at most ${MAX_URL_BYTES} bytes, got ${shownValue(url)}`,
    );
  }
}
