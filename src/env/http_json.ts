import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { Descriptor } from "../contract/grant.ts";

/** An HTTP method an `http_json` descriptor may use; POST, PUT and PATCH send a JSON body. */
export type HttpJsonMethod = "GET" | "DELETE" | "POST" | "PUT" | "PATCH";

/** Every {@linkcode HttpJsonMethod}. */
export const HTTP_JSON_METHODS: readonly HttpJsonMethod[] = Object.freeze(["GET", "DELETE", "POST", "PUT", "PATCH"]);

/**
 * An `http_json` descriptor: one JSON request against an HTTP Environment's base
 * URL. `{field}` in `path` is replaced by the input's field, URL-encoded; the
 * remaining fields become the query (GET, DELETE) or the JSON body (POST, PUT, PATCH).
 */
export interface HttpJsonDescriptor {
  /** Always `http_json`. */
  readonly type: "http_json";
  /** The request method. */
  readonly method: HttpJsonMethod;
  /** Absolute path template below the base URL, such as `/repos/{owner}/issues/{number}`. */
  readonly path: string;
}

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Throws `invalid_tool` unless `descriptor` is a well-formed {@linkcode HttpJsonDescriptor}. */
export function checkHttpJson(descriptor: Descriptor, toolName: string): HttpJsonDescriptor {
  const malformed = (why: string): never => {
    throw new BrainError("invalid_tool", `tool ${toolName}: malformed http_json descriptor: ${why}`, {
      details: { descriptor },
    });
  };
  const extra = Object.keys(descriptor).filter((key) => !["type", "method", "path"].includes(key));
  if (extra.length > 0) malformed(`unknown field ${extra.join(", ")}`);
  const { method, path } = descriptor;
  if (!HTTP_JSON_METHODS.includes(method as HttpJsonDescriptor["method"])) {
    malformed(`method must be one of ${HTTP_JSON_METHODS.join(", ")}, got ${JSON.stringify(method)}`);
  }
  if (typeof path !== "string" || !path.startsWith("/")) malformed(`path must be a string starting with "/"`);
  const literal = (path as string).replace(PLACEHOLDER, "x");
  if (/[{}?#]/.test(literal) || literal.split("/").some((part) => part === "." || part === "..")) {
    malformed(`path ${JSON.stringify(path)} may hold only {field} placeholders, no query, fragment or dot segments`);
  }
  return descriptor as unknown as HttpJsonDescriptor;
}

/** The request `descriptor` makes for `input` against `baseUrl`; input that cannot fill it is `invalid_input`. */
export function httpJsonRequest(
  baseUrl: URL,
  descriptor: HttpJsonDescriptor,
  input: unknown,
): { url: URL; method: string; body: string | undefined } {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new BrainError("invalid_input", "http_json input must be an object");
  }
  const rest: Record<string, JsonValue> = { ...input as Record<string, JsonValue> };
  const filled = new Map<string, string>();
  const path = descriptor.path.replace(PLACEHOLDER, (_, field: string) => {
    const value = rest[field];
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      throw new BrainError("invalid_input", `http_json path field ${field} must be a string, number or boolean`);
    }
    delete rest[field];
    filled.set(field, checkSegment(field, wellFormed(field, String(value))));
    return encodeURIComponent(filled.get(field)!);
  });
  // Fields that are each one segment may still make a dot segment together, as in /{a}.{b} or {a}{b}.
  for (const segment of descriptor.path.split("/")) {
    if (!segment.includes("{")) continue;
    checkSegment(segment, segment.replace(PLACEHOLDER, (_, field: string) => filled.get(field) ?? ""));
  }
  const base = baseUrl.pathname.replace(/\/$/, "");
  const url = new URL(base + path, baseUrl);
  if (url.origin !== baseUrl.origin || !url.pathname.startsWith(`${base}/`)) {
    throw new BrainError("invalid_input", `http_json input leads outside the Environment's base URL ${baseUrl.href}`);
  }
  const withBody = descriptor.method === "POST" || descriptor.method === "PUT" || descriptor.method === "PATCH";
  if (!withBody) {
    for (const [key, value] of Object.entries(rest)) {
      if (value === undefined) continue;
      url.searchParams.set(
        wellFormed(key, key),
        typeof value === "string" ? wellFormed(key, value) : JSON.stringify(value),
      );
    }
  }
  return { url, method: descriptor.method, body: withBody ? JSON.stringify(rest) : undefined };
}

/**
 * Returns `value` when it can only ever be one path segment: never `.` or `..`
 * and no `/`, `\\`, `?` or `#`, however often a server percent-decodes it.
 */
function checkSegment(field: string, value: string): string {
  // Each decoding shortens the text or leaves it as it is, so this ends.
  for (let decoded = value, previous = ""; decoded !== previous; previous = decoded, decoded = tryDecode(decoded)) {
    if (decoded === "." || decoded === ".." || /[/\\?#]/.test(decoded)) {
      throw new BrainError(
        "invalid_input",
        `http_json path field ${field} must be one path segment: not "." or ".." and no "/", "\\", "?" or "#", raw or percent-encoded`,
        { details: { field } },
      );
    }
  }
  return value;
}

/**
 * Returns `text` unless it holds a lone surrogate, which no URL can carry: encoding
 * would throw and a query would silently turn it into U+FFFD; `invalid_input` names `field`.
 */
function wellFormed(field: string, text: string): string {
  if (text.isWellFormed()) return text;
  throw new BrainError(
    "invalid_input",
    `http_json field ${JSON.stringify(field.toWellFormed())} holds a lone surrogate`,
    {
      details: { field: field.toWellFormed() },
    },
  );
}

function tryDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
