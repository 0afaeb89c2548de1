import { BrainError, type BrainErrorCode } from "./errors.ts";
import type { JsonValue } from "./json.ts";
import { allKeys } from "./known_keys.ts";

/** Every {@linkcode BrainErrorCode}, listed once so a new code that is not here fails to compile. */
const CODES: ReadonlySet<string> = new Set(
  allKeys<Record<BrainErrorCode, true>>({
    invalid_schema: true,
    invalid_options: true,
    invalid_input: true,
    invalid_output: true,
    invalid_tool: true,
    invalid_argument: true,
    duplicate_tool: true,
    no_tools: true,
    component_unreadable: true,
    unknown_tool: true,
    call_finished: true,
    budget_exceeded: true,
    session_not_found: true,
    session_exists: true,
    session_closed: true,
    journal_conflict: true,
    journal_closed: true,
    journal_corrupt: true,
    fenced: true,
    session_owned: true,
    storage_full: true,
    storage_unavailable: true,
    reattach_mismatch: true,
    call_not_found: true,
    unauthorized: true,
    permission_denied: true,
    unsupported_runtime: true,
    environment_not_found: true,
    environment_exists: true,
    setup_failed: true,
    http_error: true,
    payload_too_large: true,
    resource_exhausted: true,
    limit_exceeded: true,
    lifetime_exceeded: true,
    not_implemented: true,
    protocol_error: true,
    connection_failed: true,
    connection_lost: true,
    host_in_use: true,
    model_error: true,
    model_unavailable: true,
    timeout: true,
    cancelled: true,
    tool_error: true,
    host_disconnected: true,
    brain_closed: true,
  }),
);

/** True when `code` is one of the closed list of {@linkcode BrainErrorCode}s. */
export function isBrainErrorCode(code: unknown): code is BrainErrorCode {
  return typeof code === "string" && CODES.has(code);
}

/**
 * The {@linkcode BrainError} an error sent by a peer (a Brain server, an extension's acknowledgment) names: its
 * code when that is one of the closed list, else `protocol_error` naming the code it sent, so no caller ever sees
 * a code outside the list.
 */
export function errorFromWire(error: { code: string; message: string; details?: JsonValue }): BrainError {
  const details = error.details === undefined ? {} : { details: error.details };
  if (isBrainErrorCode(error.code)) return new BrainError(error.code, error.message, details);
  return new BrainError(
    "protocol_error",
    `the peer failed with a code Brain does not know (${JSON.stringify(error.code.slice(0, 64))}): ${error.message}`,
    details,
  );
}
