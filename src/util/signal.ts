/**
 * Resolves with `promise`, or rejects with `signal.reason` as soon as `signal`
 * aborts. The promise itself keeps running; only the wait ends.
 */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  const racers = racersOf(signal);
  return new Promise<T>((resolve, reject) => {
    racers.add(reject);
    promise.then((value) => {
      racers.delete(reject);
      resolve(value);
    }, (error) => {
      racers.delete(reject);
      reject(error);
    });
  });
}

const RACERS = Symbol("raceSignal racers");

/** The rejections waiting on `signal`, behind one abort listener per signal however many races it joins. */
function racersOf(signal: AbortSignal & { [RACERS]?: Set<(reason: unknown) => void> }) {
  let racers = signal[RACERS];
  if (!racers) {
    const waiting = racers = new Set();
    signal[RACERS] = waiting;
    signal.addEventListener("abort", () => {
      for (const reject of waiting) reject(signal.reason);
      waiting.clear();
    }, { once: true });
  }
  return racers;
}

/** Resolves true when `promise` settles, false when `signal` aborts first. */
export async function settledBeforeAbort(
  promise: Promise<unknown>,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  if (!signal) {
    await promise;
    return true;
  }
  try {
    await raceSignal(promise, signal);
    return true;
  } catch (error) {
    if (signal.aborted && error === signal.reason) return false;
    throw error;
  }
}
