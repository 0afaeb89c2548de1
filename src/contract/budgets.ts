import { BrainError } from "../outcome/errors.ts";
import { utf8Length } from "../util/utf8.ts";

/** Bytes of one Tool call's input (its JSON text) a Brain accepts by default; `maxInputBytes` changes it. */
export const BRAIN_MAX_INPUT_BYTES = 1024 * 1024;

/** UTF-8 bytes of one user message `session.send` accepts; a longer one is `payload_too_large`, nothing committed. */
export const BRAIN_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** Throws `payload_too_large` when a user message is over {@linkcode BRAIN_MAX_MESSAGE_BYTES} in UTF-8. */
export function checkMessageSize(content: string): void {
  // Three bytes per UTF-16 unit at most: a message that short needs no count.
  if (content.length * 3 <= BRAIN_MAX_MESSAGE_BYTES) return;
  const bytes = utf8Length(content);
  if (bytes > BRAIN_MAX_MESSAGE_BYTES) {
    throw new BrainError(
      "payload_too_large",
      `a user message of ${bytes} bytes is over the ${BRAIN_MAX_MESSAGE_BYTES} a session accepts`,
      { details: { bytes, maxBytes: BRAIN_MAX_MESSAGE_BYTES } },
    );
  }
}

/** Characters of a cancel reason (`call.cancel(message)`); a longer one is `payload_too_large`. */
export const BRAIN_MAX_CANCEL_REASON = 1024;

/** `tool_call_late` records one call may have; reports after that are refused with `budget_exceeded`. */
export const BRAIN_MAX_LATE_RECORDS = 16;

/** What a Component's telemetry may send per call: message size, a sustained rate with a burst, and a total. */
export const BRAIN_TELEMETRY_LIMITS: Readonly<{
  maxMessageBytes: number;
  perSecond: number;
  burst: number;
  maxPerCall: number;
}> = Object.freeze({ maxMessageBytes: 16 * 1024, perSecond: 100, burst: 200, maxPerCall: 2_000 });

/** Throws `payload_too_large` when a call's input JSON text is over `maxBytes`. */
export function checkInputSize(tool: string, bytes: number, maxBytes: number): void {
  if (bytes > maxBytes) {
    throw new BrainError(
      "payload_too_large",
      `tool ${tool}: input of ${bytes} bytes is over this Brain's ${maxBytes}`,
      {
        details: { bytes, maxBytes },
      },
    );
  }
}

/** Returns a cancel reason within {@linkcode BRAIN_MAX_CANCEL_REASON}; throws `payload_too_large` or `invalid_argument`. */
export function checkCancelReason(message: unknown): string | undefined {
  if (message === undefined) return undefined;
  if (typeof message !== "string") throw new BrainError("invalid_argument", "a cancel reason must be a string");
  if (message.length > BRAIN_MAX_CANCEL_REASON) {
    throw new BrainError(
      "payload_too_large",
      `a cancel reason holds at most ${BRAIN_MAX_CANCEL_REASON} characters, got ${message.length}`,
    );
  }
  return message;
}

/**
 * One call's telemetry allowance ({@linkcode BRAIN_TELEMETRY_LIMITS}): every
 * executor asks it before passing an entry on, and drops refused entries.
 */
export class TelemetryBudget {
  #tokens: number = BRAIN_TELEMETRY_LIMITS.burst;
  #refilled: number;
  #sent = 0;
  #now: () => number;

  /** `now` is the clock the rate is measured with. */
  constructor(now: () => number = performance.now.bind(performance)) {
    this.#now = now;
    this.#refilled = now();
  }

  /** Undefined when the entry may pass; otherwise the typed reason it is dropped. */
  admit(level: string, message: string): BrainError | undefined {
    const { maxMessageBytes, perSecond, burst, maxPerCall } = BRAIN_TELEMETRY_LIMITS;
    const bytes = level.length > maxMessageBytes || message.length > maxMessageBytes
      ? maxMessageBytes + 1
      : utf8Length(level) + utf8Length(message);
    if (bytes > maxMessageBytes) {
      return new BrainError("payload_too_large", `a telemetry entry holds at most ${maxMessageBytes} bytes`);
    }
    if (this.#sent >= maxPerCall) {
      return new BrainError("budget_exceeded", `a call sends at most ${maxPerCall} telemetry entries`);
    }
    const now = this.#now();
    this.#tokens = Math.min(burst, this.#tokens + (now - this.#refilled) * perSecond / 1000);
    this.#refilled = now;
    if (this.#tokens < 1) {
      return new BrainError("budget_exceeded", `telemetry is limited to ${perSecond} entries a second`);
    }
    this.#tokens--;
    this.#sent++;
    return undefined;
  }
}
