/** The longest thrown message Brain keeps; a longer one is cut, so a hostile throw cannot fill a record. */
export const MAX_ERROR_TEXT = 4096;

/**
 * The text of a thrown value (an Error's message, else its `String`), at most
 * {@linkcode MAX_ERROR_TEXT} characters. Never throws: a value whose `message`
 * getter, `toString` or Proxy traps throw reads as `fallback`.
 */
export function errorText(error: unknown, fallback = "an unreadable thrown value"): string {
  let text: string;
  try {
    text = String(error instanceof Error ? error.message : error);
  } catch {
    return fallback;
  }
  return text.length > MAX_ERROR_TEXT ? `${text.slice(0, MAX_ERROR_TEXT)}...` : text;
}

/** An Error's `name`, else the `typeof` of a thrown value; never throws. */
export function errorName(error: unknown): string {
  try {
    return String(error instanceof Error ? error.name : typeof error).slice(0, 128);
  } catch {
    return typeof error;
  }
}
