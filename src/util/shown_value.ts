/** The longest text of a value an error message shows. */
const MAX_SHOWN = 200;

/**
 * A value as an error message shows it, never throwing: a string (quoted, cut at
 * 200 characters), a number, boolean, BigInt, `null` or `undefined` as written,
 * or a URL's text, else only its type, for the `toString` of a Proxy or of a
 * hostile object may throw.
 */
export function shownValue(value: unknown): string {
  if (typeof value === "string") {
    return JSON.stringify(value.length > MAX_SHOWN ? `${value.slice(0, MAX_SHOWN)}...` : value);
  }
  if (typeof value === "number" || typeof value === "boolean" || value === undefined) return String(value);
  if (typeof value === "bigint") return `${String(value).slice(0, MAX_SHOWN)}n`;
  try {
    if (value instanceof URL) return value.href;
  } catch {
    // A Proxy whose prototype cannot be read is no URL.
  }
  if (value === null) return "null";
  const type = typeof value;
  return `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
}
