/**
 * Resolves with `promise`, or rejects with `signal.reason` as soon as `signal`
 * aborts. The promise itself keeps running; only the wait ends.
 */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  const waiting = (signal as RacedSignal)[WAITING];
  if (waiting) {
    return new Promise<T>((resolve, reject) => {
      waiting.add(reject);
      promise.then((value) => {
        waiting.delete(reject);
        resolve(value);
      }, (error) => {
        waiting.delete(reject);
        reject(error);
      });
    });
  }
  // The listener goes as soon as the promise settles: a signal that aborts with no listener dispatches no event.
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then((value) => {
      signal.removeEventListener("abort", onAbort);
      resolve(value);
    }, (error) => {
      signal.removeEventListener("abort", onAbort);
      reject(error);
    });
  });
}

const WAITING = Symbol("raceSignal waits");
type RacedSignal = AbortSignal & { [WAITING]?: Set<(reason: unknown) => void> };

/**
 * An abort controller whose own `abort` settles the {@linkcode raceSignal}
 * waits on its signal, so they need no event listener each: for signals that
 * many short waits race, such as a call's.
 */
export class RacedAbortController extends AbortController {
  #waiting = new Set<(reason: unknown) => void>();

  /** A controller whose signal's races it settles itself. */
  constructor() {
    super();
    (this.signal as RacedSignal)[WAITING] = this.#waiting;
  }

  /** Aborts the signal, then rejects every race still waiting on it with its reason. */
  override abort(reason?: unknown): void {
    super.abort(reason);
    for (const reject of this.#waiting) reject(this.signal.reason);
    this.#waiting.clear();
  }
}
