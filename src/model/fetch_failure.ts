import { BrainError } from "../outcome/errors.ts";
import { fetchNeverSent } from "../util/fetch_once.ts";

/**
 * The BrainError for a `fetch` that rejected before any response: known not
 * to have been sent when it never connected (a missing `--allow-net`, DNS, a
 * refused connection, a blocked port, a bad URL), so it is a retryable
 * `connection_failed` or `permission_denied` failure with its cause; otherwise
 * `connection_lost`, as the server may have received the request.
 */
export function fetchFailure(name: string, url: URL, error: unknown): BrainError {
  const cause = describe(error);
  if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) {
    return new BrainError(
      "permission_denied",
      `provider ${name} may not reach ${url.host}: run with --allow-net=${url.host}`,
      { cause: error, details: { retryable: false, cause } },
    );
  }
  if (fetchNeverSent(error)) {
    return new BrainError("connection_failed", `provider ${name} could not connect to ${url.origin}: ${cause}`, {
      cause: error,
      details: { retryable: true, cause },
    });
  }
  return new BrainError(
    "connection_lost",
    `provider ${name}: the connection to ${url.origin} failed after sending: ${cause}`,
    { cause: error },
  );
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? error.cause.message : error.message;
}
