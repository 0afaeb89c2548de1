import type { JsonValue } from "../outcome/json.ts";
import type { Outcome } from "../outcome/outcome.ts";

/** Why a Tool call ended: the first terminal cause, which later causes never replace. */
export type TerminalCause = "finish" | "error" | "timeout" | "cancelled" | "unknown";

/** The body of a journal record, before the journal gives it a sequence. */
export type RecordBody =
  /** Brain's intent to call a Tool, committed before dispatch. Its sequence names the call. */
  | {
    kind: "tool_call_started";
    tool: string;
    input: JsonValue;
    deadline?: number;
    activation: string;
  }
  /** An extension Event from `ctx.emit(event, data)`. */
  | { kind: "tool_event"; call: number; event: string; data: JsonValue }
  /** A validated result, optionally with model-facing `content`. */
  | { kind: "tool_result"; call: number; outcome: Outcome; content?: string }
  /** The Tool's synchronous phase ended; it may still emit and must still finish. */
  | { kind: "tool_returned"; call: number }
  /** The call's terminal record: its first terminal cause and final outcome. */
  | { kind: "tool_call_finished"; call: number; cause: TerminalCause; outcome: Outcome }
  /** A terminal cause, result or emission that arrived after the call had ended. */
  | { kind: "tool_call_late"; call: number; cause: string; outcome?: Outcome };

/** The kind of a journal record. */
export type RecordKind = RecordBody["kind"];

/** A committed journal record: its body plus session, dense sequence and commit time. */
export type JournalRecord = RecordBody & {
  /** The owning session. */
  sessionId: string;
  /** Dense, strictly increasing per session, starting at 1. */
  sequence: number;
  /** Commit time in milliseconds since the epoch. */
  at: number;
};

/** A Tool as a session advertises it: the contract reattachment must match. */
export interface AdvertisedTool {
  /** Tool name, unique in the session. */
  name: string;
  /** Model-facing description. */
  description: string;
  /** JSON Schema of what the input schema accepts (`io: "input"`). */
  inputSchema: Record<string, JsonValue>;
  /** JSON Schema of the parsed output, when the Tool declares one. */
  outputSchema?: Record<string, JsonValue>;
  /** Where the Tool runs: `host` (application function), `component`, `descriptor` or `http` (v1 endpoint). */
  implementation: "host" | "component" | "descriptor" | "http";
  /** The Environment binding name, when the placement names one. */
  env?: string;
}

/** What a journal keeps about a session besides its records. */
export interface SessionMeta {
  /** Session id. */
  id: string;
  /** Creation time in milliseconds since the epoch. */
  createdAt: number;
  /** The Tools placed in the session. */
  tools: AdvertisedTool[];
  /** The registered host identity; only a hash of its token is ever stored. */
  host?: { id: string; tokenHash: string };
}
