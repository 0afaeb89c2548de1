import { shownValue } from "../util/shown_value.ts";
import { fetchJson, runJsonCall } from "../run/json_call.ts";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { Dispatch } from "../contract/placement.ts";
import type { Descriptor } from "../contract/grant.ts";
import { environmentOptions } from "./host_env.ts";
import { allKeys, readOptions } from "../outcome/known_keys.ts";
import { checkHeaders } from "../util/http_headers.ts";
import type { Environment, EnvironmentOptions } from "../contract/placement.ts";
import { checkHttpJson, httpJsonRequest } from "./http_json.ts";
import { MODEL_TOKEN_HEADER, MODEL_URL_HEADER, type ModelAccess } from "../contract/placement.ts";

/** Options of {@linkcode httpEnv}. */
export interface HttpEnvOptions extends EnvironmentOptions {
  /** The `http:` or `https:` URL that descriptor paths are resolved below. */
  baseUrl: string | URL;
  /** Headers sent with every request, such as credentials; only their names are described. */
  headers?: Record<string, string>;
  /**
   * Grants the binding's Tools the session's model: each request then carries
   * `brain-model-url` and a per-call `brain-model-token`; POSTing a `ModelRequest`
   * there with `authorization: Bearer <token>` is the call's `ctx.model`. Off by default.
   */
  model?: boolean;
}

const HTTP_ENV_OPTIONS = allKeys<HttpEnvOptions>({
  name: true,
  control: true,
  setup: true,
  baseUrl: true,
  headers: true,
  model: true,
});

/**
 * An Environment that interprets `http_json` descriptors against `baseUrl`. Brain
 * sends the requests itself, so the base URL's host is a network grant checked
 * against the Brain's allow-list when a session is created. Malformed descriptors
 * fail at placement; other descriptor types are `unsupported_runtime`.
 *
 * @example
 * ```ts
 * import { httpEnv, tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const github = httpEnv({ name: "github", baseUrl: "https://api.github.com" });
 * const fetchIssue = tool({
 *   name: "fetch_issue",
 *   description: "Fetch one issue.",
 *   input: z.object({ number: z.number().int() }),
 *   options: z.object({ repository: z.string() }),
 *   implementation: ({ repository }) => ({
 *     type: "http_json",
 *     method: "GET",
 *     path: `/repos/${repository}/issues/{number}`,
 *   }),
 * });
 * const placed = fetchIssue({ env: github, repository: "aexhq/brain" });
 * console.log(placed.advertised.env); // "github"
 * ```
 */
export function httpEnv(given: HttpEnvOptions): Environment {
  const options = readOptions("httpEnv options", given, HTTP_ENV_OPTIONS);
  const { name, control, setup } = environmentOptions(options);
  let baseUrl: URL;
  try {
    baseUrl = new URL(options.baseUrl);
  } catch {
    throw new BrainError(
      "invalid_argument",
      `environment ${name}: baseUrl ${shownValue(options.baseUrl)} is not a URL`,
    );
  }
  if (
    (baseUrl.protocol !== "http:" && baseUrl.protocol !== "https:") || baseUrl.search || baseUrl.hash ||
    baseUrl.username || baseUrl.password
  ) {
    throw new BrainError(
      "invalid_argument",
      `environment ${name}: baseUrl must be http(s) without credentials, query or fragment`,
    );
  }
  const headers = checkHeaders(`environment ${name}`, options.headers);
  if (options.model !== undefined && typeof options.model !== "boolean") {
    throw new BrainError("invalid_argument", `environment ${name}: model must be a boolean`);
  }
  const model = options.model === true;
  const check = (descriptor: Descriptor, toolName: string) => {
    if (descriptor.type !== "http_json") {
      throw new BrainError(
        "unsupported_runtime",
        `tool ${toolName}: environment ${name} interprets http_json descriptors, not ${descriptor.type}`,
      );
    }
    return checkHttpJson(descriptor, toolName);
  };
  const invoke = async (
    descriptor: Descriptor,
    input: unknown,
    signal: AbortSignal,
    access?: ModelAccess,
  ): Promise<JsonValue> => {
    const { url, method, body } = httpJsonRequest(baseUrl, check(descriptor, "call"), input);
    return await fetchJson(url, {
      method,
      body,
      signal,
      headers: {
        accept: "application/json",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...headers,
        ...(access ? { [MODEL_URL_HEADER]: access.url, [MODEL_TOKEN_HEADER]: access.token } : {}),
      },
    });
  };
  return Object.freeze({
    name,
    kind: "http",
    grant: Object.freeze({ net: Object.freeze([baseUrl.host]) as string[] }),
    control,
    setup,
    model,
    describe: (): JsonValue => ({
      kind: "http",
      name,
      baseUrl: baseUrl.href,
      headers: Object.keys(headers).sort(),
      control: [...control],
      ...(model ? { model } : {}),
    }),
    checkDescriptor: (descriptor: Descriptor, toolName: string) => void check(descriptor, toolName),
    invoke: (descriptor: Descriptor, input: JsonValue, signal: AbortSignal) => invoke(descriptor, input, signal),
    interpret: (descriptor: Descriptor, dispatch: Dispatch) =>
      runJsonCall(dispatch, (input, signal) => invoke(descriptor, input, signal, dispatch.modelAccess)),
  });
}
