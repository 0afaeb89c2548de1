/** Largest delay `setTimeout` honours; longer delays are re-armed in steps. */
const MAX_DELAY = 2 ** 31 - 1;

/**
 * Calls `callback` once at the absolute time `at` (milliseconds since the epoch),
 * never before it by the wall clock, also for times further away than `setTimeout`
 * can wait. Returns a cancel function.
 */
export function callAt(at: number, callback: () => void): () => void {
  let handle: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    const delay = at - Date.now();
    if (delay > 0) {
      handle = setTimeout(arm, Math.min(delay, MAX_DELAY));
      return;
    }
    handle = undefined;
    callback();
  };
  arm();
  return () => {
    if (handle !== undefined) clearTimeout(handle);
    handle = undefined;
  };
}
