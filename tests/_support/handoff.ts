import { withDeadline } from "./deadline.ts";

/** Values that code under test hands to the test, taken in the order they were given. */
export interface Handoff<T> {
  /** Hands `value` over: to the oldest waiting `next()`, or kept for the next one. */
  put(value: T): void;
  /** The oldest value not yet taken, as soon as it is handed over; fails after `ms` (5 s by default). */
  next(what?: string, ms?: number): Promise<T>;
}

/**
 * A hand-off from code under test to the test, with no polling: for example a Tool puts its `ctx`
 * and the test awaits `next()` to drive it.
 */
export function handoff<T>(): Handoff<T> {
  const ready: T[] = [];
  const waiting: ((value: T) => void)[] = [];
  return {
    put(value) {
      const waiter = waiting.shift();
      if (waiter) waiter(value);
      else ready.push(value);
    },
    next(what = "the next hand-off", ms) {
      if (ready.length > 0) return Promise.resolve(ready.shift()!);
      const { promise, resolve } = Promise.withResolvers<T>();
      waiting.push(resolve);
      return withDeadline(promise, what, ms);
    },
  };
}
