/**
 * Resolves with `promise`, or rejects with `signal.reason` as soon as `signal`
 * aborts. The promise itself keeps running; only the wait ends.
 */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return abandoned(promise, signal.reason);
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

/**
 * Rejects with `reason` at once: nobody waits for `promise` any more, so its own later rejection is handled here,
 * never an unhandled rejection that ends the process.
 */
function abandoned<T>(promise: Promise<T>, reason: unknown): Promise<T> {
  promise.catch(() => {});
  return Promise.reject(reason);
}

/**
 * Calls `callback` once `signal` aborts (at once when it already has). A
 * {@linkcode RacedAbortController}'s signal calls it from its own `abort`, with
 * no event listener: for signals many watch, such as each call's.
 */
export function onAborted(signal: AbortSignal, callback: () => void): void {
  if (signal.aborted) return callback();
  const controller = (signal as RacedSignal)[CONTROLLER];
  if (controller) controller.watch(callback);
  else signal.addEventListener("abort", callback, { once: true });
}

const CONTROLLER = Symbol("raceSignal's controller");
type RacedSignal = AbortSignal & { [CONTROLLER]?: RacedAbortController };

/**
 * An abort controller whose own `abort` settles the {@linkcode raceSignal}
 * waits on its signal, so they need no event listener each: for signals that
 * many short waits race, such as a call's.
 */
export class RacedAbortController extends AbortController {
  /** The rejections of the waits still racing the signal, and the watchers; made by the first. */
  #waiting: Set<(reason: unknown) => void> | undefined;

  /** A controller whose signal's races it settles itself. */
  constructor() {
    super();
    (this.signal as RacedSignal)[CONTROLLER] = this;
  }

  /**
   * Aborts the signal, then rejects every race still waiting on it with its
   * reason and tells every watcher. What a listener throws (a Tool's own, on
   * `ctx.signal`) is logged, not left to end the process.
   */
  override abort(reason?: unknown): void {
    if (!containerAdded) {
      globalThis.addEventListener("error", containThrown);
      containerAdded = true;
    }
    containing++;
    try {
      super.abort(reason);
      if (!this.#waiting) return;
      for (const settle of this.#waiting) {
        try {
          settle(this.signal.reason);
        } catch (error) {
          // As an event listener's would be: reported, and the others still told.
          reportError(error);
        }
      }
      this.#waiting.clear();
    } finally {
      containing--;
    }
  }

  /** {@linkcode onAborted} on this controller's signal, which has not aborted yet. */
  watch(callback: () => void): void {
    (this.#waiting ??= new Set()).add(callback);
  }

  /** {@linkcode raceSignal} on this controller's signal. */
  race<T>(promise: Promise<T>): Promise<T> {
    if (this.signal.aborted) return abandoned(promise, this.signal.reason);
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

/** How many {@linkcode RacedAbortController} aborts are running, one inside another. */
let containing = 0;
/**
 * Whether {@linkcode containThrown} listens yet: added by the first abort and
 * kept, since adding and removing a global listener around each abort costs a
 * call more than its other bookkeeping.
 */
let containerAdded = false;

/**
 * Stops an exception a listener threw while a {@linkcode RacedAbortController}
 * aborted from ending the process, as Deno does with one nothing handled. An
 * abort runs its listeners, the Tool's among them, before it returns, so the
 * exception is the listener's: the Tool's code, not Brain's, nor the application's.
 */
function containThrown(event: ErrorEvent): void {
  if (containing === 0) return;
  event.preventDefault();
  console.error("a listener of an aborted call's signal threw:", event.error);
}
