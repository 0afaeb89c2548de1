/**
 * `promise`, or a rejection naming `what` once `ms` (5 s by default) pass first: a test that waits on
 * code under test never hangs.
 *
 * For example:
 *   await withDeadline(started.promise, "the Tool to start");
 */
export async function withDeadline<T>(promise: Promise<T>, what: string, ms = 5_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Ten seconds from now: every test call is bounded. */
export const soon = (): number => Date.now() + 10_000;
