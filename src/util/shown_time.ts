/** The latest time a `Date` can hold, in ms since the epoch (either side of it). */
const MAX_DATE_MS = 8.64e15;

/**
 * A time in ms since the epoch as ISO 8601 text, or as the number itself when no
 * `Date` can hold it (a stored value a hand edited, say), so a message about it
 * never throws.
 */
export function shownTime(ms: number): string {
  return Number.isFinite(ms) && Math.abs(ms) <= MAX_DATE_MS ? new Date(ms).toISOString() : `${ms} ms`;
}
