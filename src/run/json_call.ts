import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import { fail, ok, type Outcome } from "../outcome/outcome.ts";
import type { PublishedResult } from "../contract/call.ts";
import { raceSignal } from "../util/signal.ts";
import type { Dispatch } from "../contract/placement.ts";
import { parseInput } from "./host_tool.ts";
import { normalizeOutput } from "./output.ts";
import { toolError } from "./tool_error.ts";
import { readBounded } from "../util/read_bounded.ts";
import { fetchNeverSent, fetchOnce } from "../util/fetch_once.ts";

const MAX_ERROR_BODY = 2_048;
/** Failures Brain itself finds in a request's input or answer, rather than the endpoint's. */
const REFUSED: readonly string[] = ["invalid_input", "invalid_output", "payload_too_large"];

/**
 * Sends one request and resolves with its JSON body (`null` when empty). A
 * non-2xx status rejects with `http_error` (status and body in `details`, retryable
 * for 429 and 5xx), as does a request known never to have been sent; a body that
 * is not JSON rejects with `invalid_output`; a connection that broke after the
 * request may have reached the server rejects with `connection_lost`.
 */
export async function fetchJson(url: URL, init: RequestInit & { signal: AbortSignal }): Promise<JsonValue> {
  const method = init.method ?? "GET";
  let response: Response;
  try {
    response = await fetchOnce(url, init);
  } catch (error) {
    if (init.signal.aborted) throw init.signal.reason;
    if (!fetchNeverSent(error)) throw lost(`${method} ${url.href}`, error);
    throw new BrainError("http_error", `${method} ${url.href} failed: ${(error as Error).message}`, {
      details: { url: url.href },
      cause: error,
    });
  }
  let text: string;
  try {
    text = await readBounded(response.body, `the body of ${method} ${url.href}`);
  } catch (error) {
    if (init.signal.aborted) throw init.signal.reason;
    throw error instanceof BrainError ? error : lost(`${method} ${url.href}`, error);
  }
  if (!response.ok) {
    throw new BrainError("http_error", `${method} ${url.href} answered ${response.status}`, {
      details: { status: response.status, body: text.slice(0, MAX_ERROR_BODY), retryable: retryable(response.status) },
    });
  }
  if (text.trim() === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    throw new BrainError(
      "invalid_output",
      `${method} ${url.href} answered ${response.status} with a body that is not JSON`,
    );
  }
}

/**
 * Runs one dispatched call whose whole work is `request`: the declaration's input
 * schema parses the input, `request`'s JSON is the finishing result as plain
 * data (a reserved `status` in it stays data), and the output schema validates it.
 * A BrainError from `request` becomes an `error` outcome with the same code, except
 * `connection_lost`: the request may have done its work, so the call ends `unknown`.
 */
export function runJsonCall(
  dispatch: Dispatch,
  request: (input: unknown, signal: AbortSignal) => Promise<JsonValue>,
): void {
  jsonCall(dispatch, request).catch(() => {});
}

async function jsonCall(
  { tool, invocation, sink }: Dispatch,
  request: (input: unknown, signal: AbortSignal) => Promise<JsonValue>,
): Promise<void> {
  const parsed = await parseInput(tool, invocation, sink);
  if (!parsed) return;
  let ended: { result: PublishedResult; cause: "finish" | "error" | "unknown" };
  try {
    const { outcome, invalid } = await raceSignal(
      request(parsed.value, sink.signal).then((value) => normalizeOutput(tool.output, ok(value))),
      sink.signal,
    );
    ended = { result: { outcome }, cause: invalid ? "error" : "finish" };
  } catch (error) {
    // Brain ended the call and cut its request: the endpoint gave no answer, so there is nothing to report late.
    if (sink.signal.aborted) return;
    if (error instanceof BrainError && error.code === "connection_lost") {
      ended = { result: { outcome: { status: "unknown", message: error.message } }, cause: "unknown" };
    } else if (error instanceof BrainError) {
      // Input or an answer Brain refuses ends the call error, as schema validation does; the endpoint's own
      // failure status is its answer.
      ended = { result: { outcome: requestFailure(error) }, cause: REFUSED.includes(error.code) ? "error" : "finish" };
    } else ended = { result: toolError(error), cause: "error" };
  }
  await sink.finish(ended.result, ended.cause);
}

function lost(request: string, error: unknown): BrainError {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
  return new BrainError(
    "connection_lost",
    `${request}: the connection broke after sending, before an answer: ${cause}`,
    {
      cause: error,
    },
  );
}

function requestFailure(error: BrainError): Outcome {
  const details = error.details as { retryable?: boolean } | undefined;
  return fail(error.code, error.message, {
    ...(error.details === undefined ? {} : { details: error.details }),
    ...(typeof details?.retryable === "boolean" ? { retryable: details.retryable } : {}),
  });
}

function retryable(status: number): boolean {
  return status === 429 || status >= 500;
}
