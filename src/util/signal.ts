/**
 * Resolves with `promise`, or rejects with `signal.reason` as soon as `signal`
 * aborts. The promise itself keeps running; only the wait ends.
 */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  const controller = (signal as RacedSignal)[CONTROLLER];
  if (controller) return controller.race(promise);
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

const CONTROLLER = Symbol("raceSignal's controller");
type RacedSignal = AbortSignal & { [CONTROLLER]?: RacedAbortController };

/**
 * An abort controller whose own `abort` settles the {@linkcode raceSignal}
 * waits on its signal, so they need no event listener each: for signals that
 * many short waits race, such as a call's.
 */
export class RacedAbortController extends AbortController {
  /** The rejections of the waits still racing the signal; made by the first wait. */
  #waiting: Set<(reason: unknown) => void> | undefined;

  /** A controller whose signal's races it settles itself. */
  constructor() {
    super();
    (this.signal as RacedSignal)[CONTROLLER] = this;
  }

  /** Aborts the signal, then rejects every race still waiting on it with its reason. */
  override abort(reason?: unknown): void {
    super.abort(reason);
    if (!this.#waiting) return;
    for (const reject of this.#waiting) reject(this.signal.reason);
    this.#waiting.clear();
  }

  /** {@linkcode raceSignal} on this controller's signal. */
  race<T>(promise: Promise<T>): Promise<T> {
    if (this.signal.aborted) return Promise.reject(this.signal.reason);
    const waiting = this.#waiting ??= new Set();
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
}
