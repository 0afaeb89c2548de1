import { readOptions } from "../outcome/known_keys.ts";
import { checkHeaders, checkHeaderValue } from "../util/http_headers.ts";
import { fetchOnce } from "../util/fetch_once.ts";
import { shownValue } from "../util/shown_value.ts";
import { boundedBody, readBounded } from "../util/read_bounded.ts";
import { z } from "zod";
import { BrainError } from "../outcome/errors.ts";
import { fetchFailure } from "./fetch_failure.ts";
import { readChatStream } from "./openai_stream.ts";
import { fromWire, MAX_ERROR_MESSAGE, reportedError, wireError, wireRequest, wireResponse } from "./openai_wire.ts";
import type { ModelProvider, ModelResult, ProviderCall } from "./types.ts";

/** Options for {@linkcode openAICompatible}. */
export interface OpenAICompatibleOptions {
  /** The API base, such as `https://api.openai.com/v1/`; `chat/completions` is resolved against it. */
  baseUrl: string | URL;
  /** Provider name recorded with each call; `openai-compatible` by default. */
  name?: string;
  /** How long one request may take, headers and body; 60 seconds by default. */
  timeoutMs?: number;
  /** Extra request headers. */
  headers?: Record<string, string>;
  /**
   * Ask for a streamed response (server-sent events). The Agentloop's turns
   * are then journaled fragment by fragment as `assistant_delta` records while
   * the model writes; the result is the same. Off by default.
   */
  stream?: boolean;
  /**
   * The most bytes of one response body read, streamed or not (32 MiB by
   * default): a longer one ends the call with `payload_too_large` as soon as it
   * passes the limit, so a provider that never stops writing cannot exhaust memory.
   */
  maxResponseBytes?: number;
}

/** The default {@linkcode OpenAICompatibleOptions.maxResponseBytes}: 32 MiB. */
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/**
 * A provider for any server that speaks the OpenAI chat-completions protocol.
 * Tools become `function` tools with their input JSON Schema as `parameters`;
 * the session's `credentials.apiKey` is sent as a bearer token.
 *
 * Failures are BrainErrors, journaled as the model call's outcome:
 * `connection_failed` (retryable) when the request never left (DNS, a refused
 * connection, a blocked port) and `permission_denied` without `--allow-net`,
 * both with their cause; `model_error` for an HTTP error status, keeping the
 * provider's `error.code`, `type` and `Retry-After` in `details` (retryable for
 * 408, 409, 429 and 5xx); `protocol_error` for a body that is not a chat
 * completion (a 200 whose body is an `error` object is a `model_error`);
 * `payload_too_large` for a body past `maxResponseBytes`; `timeout` after
 * `timeoutMs`; `connection_lost` when the connection failed after sending, so
 * the outcome is unknown. Redirects are not followed (the request carries the
 * API key): a 3xx answer is a `model_error` naming its `Location`. A malformed tool
 * call fails only itself (see `ModelToolCall.error`); a refusal is `refusal`.
 *
 * @example
 * ```ts
 * import { openAICompatible } from "@aexhq/brain";
 * const provider = openAICompatible({ baseUrl: "http://127.0.0.1:8080/v1/", stream: true });
 * console.log(provider.name); // "openai-compatible"
 * ```
 */
export function openAICompatible(options: OpenAICompatibleOptions): ModelProvider {
  const read = readOptions("openAICompatible options", options, [
    "baseUrl",
    "name",
    "timeoutMs",
    "headers",
    "stream",
    "maxResponseBytes",
  ]);
  const { name = "openai-compatible", timeoutMs = 60_000, stream = false, maxResponseBytes = MAX_RESPONSE_BYTES } =
    read;
  const headers = checkHeaders("openAICompatible", read.headers);
  let base: URL | undefined;
  try {
    base = new URL(read.baseUrl);
  } catch {
    // Refused below.
  }
  if (!base || (base.protocol !== "http:" && base.protocol !== "https:") || base.username || base.password) {
    throw new BrainError(
      "invalid_argument",
      `openAICompatible needs an http(s) baseUrl without credentials, got ${shownValue(read.baseUrl)}`,
    );
  }
  if (typeof name !== "string" || name === "" || typeof stream !== "boolean") {
    throw new BrainError("invalid_argument", "openAICompatible: name is a non-empty string and stream a boolean");
  }
  if (!base.pathname.endsWith("/")) base.pathname += "/";
  if (base.pathname.endsWith("/chat/completions/")) {
    throw new BrainError(
      "invalid_argument",
      `openAICompatible: baseUrl is the API's base, such as https://api.openai.com/v1/, without chat/completions ` +
        `(Brain adds it); got ${shownValue(String(read.baseUrl))}`,
    );
  }
  const endpoint = new URL("chat/completions", base);
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) {
    throw new BrainError("invalid_argument", `timeoutMs must be a positive number, got ${shownValue(timeoutMs)}`);
  }
  if (!Number.isSafeInteger(maxResponseBytes) || maxResponseBytes <= 0) {
    throw new BrainError(
      "invalid_argument",
      `maxResponseBytes must be a positive whole number, got ${shownValue(maxResponseBytes)}`,
    );
  }
  const settings = { name, endpoint, timeoutMs, headers, stream, maxResponseBytes };
  return Object.freeze({ name, complete: (call: ProviderCall) => complete(settings, call) });
}

interface Settings {
  name: string;
  endpoint: URL;
  timeoutMs: number;
  headers: Record<string, string>;
  stream: boolean;
  maxResponseBytes: number;
}

async function complete(
  { name, endpoint, timeoutMs, headers: extraHeaders, stream, maxResponseBytes }: Settings,
  { model, request, credentials, signal, onDelta }: ProviderCall,
): Promise<ModelResult> {
  const timedOut = new BrainError("timeout", `provider ${name} did not answer within ${timeoutMs} ms`);
  const stop = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
  const headers: Record<string, string> = { ...extraHeaders, "content-type": "application/json" };
  if (credentials.apiKey !== undefined) {
    // Refused here, before anything is sent, rather than by fetch as a failure that may have been sent.
    checkHeaderValue(`the apiKey of provider ${name}`, credentials.apiKey);
    headers.authorization = `Bearer ${credentials.apiKey}`;
  }
  const interrupted = (): never => {
    if (signal.aborted) throw signal.reason;
    throw timedOut;
  };
  let response: Response;
  try {
    // Sent at most once (a model call is never replayed), and a redirect is answered, not followed.
    response = await fetchOnce(endpoint, {
      method: "POST",
      headers,
      body: JSON.stringify(wireRequest(model, request, stream)),
      signal: stop,
    });
  } catch (error) {
    if (stop.aborted) interrupted();
    throw fetchFailure(name, endpoint, error);
  }
  const received = (error: unknown): never => {
    if (stop.aborted) interrupted();
    if (error instanceof BrainError) throw error;
    throw new BrainError("connection_lost", `provider ${name}: the connection failed after sending: ${error}`, {
      cause: error,
    });
  };
  const what = `the response of provider ${name}`;
  const declared = Number(response.headers.get("content-length") ?? NaN);
  if (declared > maxResponseBytes) {
    await response.body?.cancel().catch(() => {});
    throw new BrainError("payload_too_large", `${what} is longer than ${maxResponseBytes} bytes`, {
      details: { maxBytes: maxResponseBytes },
    });
  }
  const eventStream = /^text\/event-stream\b/i.test(response.headers.get("content-type") ?? "");
  if (response.ok && response.body && eventStream) {
    try {
      return await readChatStream(name, model, boundedBody(response.body, what, maxResponseBytes), onDelta);
    } catch (error) {
      return received(error);
    }
  }
  let text: string;
  try {
    text = await readBounded(response.body, what, maxResponseBytes);
  } catch (error) {
    return received(error);
  }
  if (!response.ok) throw httpError(name, response, text);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new BrainError("protocol_error", `provider ${name} answered with a body that is not JSON`);
  }
  const failed = wireError.safeParse(body);
  if (failed.success) throw reportedError(name, failed.data.error, "answered 200 with an error");
  const parsed = wireResponse.safeParse(body);
  if (!parsed.success) {
    throw new BrainError(
      "protocol_error",
      `provider ${name} answered with no chat completion: ${z.prettifyError(parsed.error)}`,
    );
  }
  return fromWire(model, parsed.data);
}

function httpError(name: string, response: Response, text: string): BrainError {
  const { status } = response;
  const details: Record<string, string | number | boolean> = {
    status,
    retryable: status === 408 || status === 409 || status === 429 || status >= 500,
    message: text.slice(0, MAX_ERROR_MESSAGE),
  };
  const location = response.headers.get("location");
  if (status >= 300 && status < 400) {
    details.message = `redirects are not followed; point baseUrl at ${location?.slice(0, MAX_ERROR_MESSAGE)}`;
  }
  try {
    const parsed = wireError.safeParse(JSON.parse(text));
    if (parsed.success) {
      const { message, code, type, param } = parsed.data.error;
      details.message = message.slice(0, MAX_ERROR_MESSAGE);
      if (code !== undefined && code !== null) details.code = typeof code === "string" ? code.slice(0, 200) : code;
      if (type) details.type = type.slice(0, 200);
      if (param) details.param = param.slice(0, 200);
    }
  } catch {
    // not JSON: keep the text
  }
  const retryAfterMs = retryAfter(response.headers);
  if (retryAfterMs !== undefined) details.retryAfterMs = retryAfterMs;
  const code = details.code === undefined ? "" : ` (${details.code})`;
  return new BrainError("model_error", `provider ${name} answered ${status}${code}: ${details.message}`, { details });
}

/** How long the provider asks to wait, from `retry-after-ms` or `Retry-After` (seconds or an HTTP date). */
function retryAfter(headers: Headers): number | undefined {
  const ms = Number(headers.get("retry-after-ms") ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get("retry-after");
  if (value === null) return undefined;
  const seconds = Number(value);
  if (value.trim() !== "" && Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
