import type { JsonValue } from "./json.ts";

/**
 * Every code a {@linkcode BrainError} can carry: one closed list, stable across releases.
 * Callers branch on the code, never on the message.
 */
export type BrainErrorCode =
  | "invalid_schema"
  | "invalid_options"
  | "invalid_input"
  | "invalid_output"
  | "invalid_tool"
  | "invalid_argument"
  | "duplicate_tool"
  | "no_tools"
  | "component_unreadable"
  | "unknown_tool"
  | "call_finished"
  | "budget_exceeded"
  | "session_not_found"
  | "session_exists"
  | "session_closed"
  | "journal_conflict"
  | "journal_closed"
  | "journal_corrupt"
  | "fenced"
  | "session_owned"
  | "storage_full"
  | "storage_unavailable"
  | "reattach_mismatch"
  | "call_not_found"
  | "unauthorized"
  | "permission_denied"
  | "unsupported_runtime"
  | "environment_not_found"
  | "environment_exists"
  | "setup_failed"
  | "http_error"
  | "payload_too_large"
  | "resource_exhausted"
  | "limit_exceeded"
  | "lifetime_exceeded"
  | "not_implemented"
  | "protocol_error"
  | "connection_failed"
  | "connection_lost"
  | "host_in_use"
  | "model_error"
  | "model_unavailable"
  | "timeout"
  | "cancelled"
  | "tool_error"
  | "host_disconnected"
  | "brain_closed";

/**
 * The one error type Brain throws. `code` is stable across releases; `details`
 * carries JSON data that explains the failure (for example schema issues).
 *
 * @example
 * ```ts
 * import { BrainError } from "@aexhq/brain";
 * try {
 *   throw new BrainError("invalid_input", "id must be a string");
 * } catch (error) {
 *   if (error instanceof BrainError && error.code === "invalid_input") {
 *     console.log(error.message);
 *   }
 * }
 * ```
 */
export class BrainError extends Error {
  /** The stable machine-readable code. */
  readonly code: BrainErrorCode;
  /** Optional JSON details, such as validation issues. */
  readonly details?: JsonValue;

  /** Creates an error with a stable `code`, a message and optional JSON details. */
  constructor(
    code: BrainErrorCode,
    message: string,
    options: { details?: JsonValue; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "BrainError";
    this.code = code;
    if (options.details !== undefined) this.details = options.details;
  }
}
