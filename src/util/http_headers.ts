import { BrainError } from "../outcome/errors.ts";
import { readRecord } from "../outcome/known_keys.ts";

/**
 * Throws `invalid_argument` unless `value` can travel as an HTTP header value: a string
 * without control characters but tab, so no CR or LF can end the header early, and
 * with no character past U+00FF (a header is bytes: `fetch` refuses anything wider).
 */
export function checkHeaderValue(what: string, value: unknown): void {
  if (typeof value !== "string" || /[^\t -~\u0080-\u00ff]/.test(value)) {
    throw new BrainError(
      "invalid_argument",
      `${what} must be a string of Latin-1 characters without control characters such as CR or LF`,
    );
  }
}

/**
 * `headers` read once into a frozen copy, each name an HTTP token and each value a
 * header value ({@linkcode checkHeaderValue}); throws `invalid_argument` naming `where`.
 */
export function checkHeaders(
  where: string,
  headers: Record<string, string> | undefined,
): Readonly<Record<string, string>> {
  if (headers === undefined) return Object.freeze({});
  const read = readRecord(`${where} headers`, headers);
  for (const [name, value] of Object.entries(read)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new BrainError(
        "invalid_argument",
        `${where}: ${JSON.stringify(name.slice(0, 64))} is not an HTTP header name`,
      );
    }
    checkHeaderValue(`${where}: the ${name} header`, value);
  }
  return Object.freeze(read);
}
