import type { JsonValue } from "../outcome/json.ts";
import type { Outcome } from "../outcome/outcome.ts";

/**
 * One line of an Application tool extension's NDJSON response: a report the Tool
 * made (numbered per call, each awaiting Brain's acknowledgment), or `expired`
 * when the request lifetime passed before the Tool finished (`cause: "timeout"`
 * when the call's own deadline was what bounded it).
 */
export type ExtensionReport =
  | { type: "result"; id: number; outcome: Outcome; content?: string }
  | { type: "returned"; id: number; outcome?: Outcome; content?: string }
  | { type: "finish"; id: number; outcome?: Outcome; content?: string; cause: "finish" | "error" }
  | { type: "expired"; message: string; cause?: "timeout" };

/**
 * Brain's acknowledgment of one report, posted after the journal committed it
 * (`sequence`, `late` for a finish) or refused it (`error`).
 */
export interface ExtensionAck {
  /** The owning session. */
  sessionId: string;
  /** Sequence of the call's `tool_call_started` record. */
  call: number;
  /** The acknowledged report's `id`. */
  report: number;
  /** The committed record's sequence. */
  sequence?: number;
  /** True when the finish arrived after the call had ended. */
  late?: boolean;
  /** Why Brain did not commit the report. */
  error?: { code: string; message: string; details?: JsonValue };
}

/**
 * Brain's notice, posted to the acks route, that it ended a call itself (its
 * deadline, a cancellation, a lost connection) before cutting the request, so
 * the Tool's `ctx.signal.reason` names the same cause as in every other transport.
 */
export interface ExtensionEnded {
  /** The owning session. */
  sessionId: string;
  /** Sequence of the call's `tool_call_started` record. */
  call: number;
  /** The call's first terminal cause. */
  ended: "timeout" | "cancelled" | "unknown";
}

/** The extension routes, relative to its base URL. */
export const EXTENSION_ROUTES = Object.freeze({ calls: "calls", acks: "calls/acks" });

/** Why a placement's options cannot reach an Application tool extension, which compares them with its own as JSON. */
export function optionsNotJson(tool: string, nonJson: string): string {
  return `tool ${tool}: an Application tool extension compares a placement's options with its own as JSON, and ` +
    `${nonJson}`;
}
