import { shownValue } from "../util/shown_value.ts";
import { checkHeaders } from "../util/http_headers.ts";
import { readOptions, readRecord } from "../outcome/known_keys.ts";
import { netAllowed } from "../env/grants.ts";
import { BrainError } from "../outcome/errors.ts";
import type { Implementation } from "../contract/placement.ts";
import type { Invocation } from "../contract/call.ts";
import { tool, type ToolFactory, type ToolSpec } from "../tool/tool.ts";
import type { Schema } from "../contract/placement.ts";
import { fetchJson, runJsonCall } from "../run/json_call.ts";

/** Options of {@linkcode http}. */
export interface HttpOptions {
  /** Headers sent with every request, such as credentials. */
  headers?: Record<string, string>;
}

/**
 * A v1 HTTP endpoint as a Tool implementation. For each call Brain POSTs the
 * parsed input as JSON (with `brain-session-id`, `brain-call-sequence` and, when
 * limited, `brain-deadline` headers) and treats the JSON body as ordinary output:
 * plain JSON, never an outcome envelope, validated by the output schema. A
 * non-2xx answer is an `http_error` outcome. The URL's host must be in the Brain's
 * `allow.net`, checked when a session is created; placed in an Environment other
 * than a `hostEnv`, whose grant would not apply to it, it is `unsupported_runtime` there.
 *
 * @example
 * ```ts
 * import { http, tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const score = tool({
 *   name: "score",
 *   description: "Score a text.",
 *   input: z.object({ text: z.string() }),
 *   output: z.object({ score: z.number() }),
 *   implementation: http("https://scores.example.com/v1/score"),
 * });
 * console.log(score().advertised.implementation); // "http"
 * ```
 */
export function http(url: string | URL, options: HttpOptions = {}): Implementation {
  const { headers = {} } = readOptions("http() options", options, ["headers"]);
  let endpoint: URL;
  try {
    endpoint = new URL(url);
  } catch {
    throw new BrainError("invalid_tool", `http(): ${shownValue(url)} is not a URL`);
  }
  if ((endpoint.protocol !== "http:" && endpoint.protocol !== "https:") || endpoint.username || endpoint.password) {
    throw new BrainError("invalid_tool", `http(): ${endpoint.origin} is not an http(s) URL without credentials`);
  }
  const fixed = checkHeaders("http()", headers);
  return Object.freeze(
    {
      kind: "http" as const,
      admit({ allow, env }) {
        if (env && env.kind !== "host") {
          // Brain's own process calls the endpoint: a binding's grant or interpreter would never apply to it.
          return Promise.reject(
            new BrainError(
              "unsupported_runtime",
              `http tool endpoint ${endpoint.host} is called by Brain itself, outside environment ${env.name} (${env.kind}); ` +
                `place it without an env or in a hostEnv, or use an httpEnv with an http_json descriptor`,
              { details: { environment: env.name, kind: env.kind } },
            ),
          );
        }
        if (netAllowed(endpoint.host, allow?.net)) return Promise.resolve();
        return Promise.reject(
          new BrainError(
            "permission_denied",
            `http tool endpoint ${endpoint.host} is outside this Brain's allow-list`,
            {
              details: { denied: `net "${endpoint.host}"` },
            },
          ),
        );
      },
      execute(dispatch) {
        runJsonCall(dispatch, (input, signal) =>
          fetchJson(endpoint, {
            method: "POST",
            body: JSON.stringify(input),
            signal,
            headers: { ...callHeaders(dispatch.invocation), ...fixed },
          }));
      },
    } satisfies Implementation,
  );
}

const HTTP_TOOL_FIELDS = ["name", "description", "input", "output", "url", "headers"];

/**
 * Declares a Tool implemented by a v1 HTTP endpoint: `tool()` with
 * `implementation: http(url, { headers })`.
 *
 * @example
 * ```ts
 * import { httpTool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const score = httpTool({
 *   name: "score",
 *   description: "Score a text.",
 *   input: z.object({ text: z.string() }),
 *   url: "https://scores.example.com/v1/score",
 * });
 * console.log(score.name); // "score"
 * ```
 */
export function httpTool<I extends Schema, O extends Schema | undefined = undefined>(
  spec: Omit<ToolSpec<I, O, undefined>, "run" | "implementation" | "options"> & { url: string | URL } & HttpOptions,
): ToolFactory<undefined> {
  const { url, headers, ...contract } = readRecord("httpTool spec", spec);
  const unknown = Object.keys(contract).filter((key) => !HTTP_TOOL_FIELDS.includes(key));
  if (unknown.length > 0) {
    throw new BrainError(
      "invalid_tool",
      `httpTool ${shownValue(contract.name)}: unknown field ${unknown.join(", ")}: the fields are ${
        HTTP_TOOL_FIELDS.join(", ")
      }`,
    );
  }
  return tool<I, O, undefined>({ ...contract, implementation: http(url, { headers }) });
}

function callHeaders({ sessionId, sequence, deadline }: Invocation): Record<string, string> {
  return {
    "content-type": "application/json",
    accept: "application/json",
    "brain-session-id": sessionId,
    "brain-call-sequence": String(sequence),
    ...(deadline === undefined ? {} : { "brain-deadline": String(deadline) }),
  };
}
