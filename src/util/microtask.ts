const settled = Promise.resolve();

/**
 * Runs `callback` in a microtask, as `queueMicrotask` does, as the reaction of
 * a settled promise: Deno's `queueMicrotask` wraps each callback in a closure
 * of its own, which a call's hot path pays for twice. The two share one queue,
 * so the order is the same. What `callback` throws is an unhandled rejection.
 *
 * @example
 * ```ts
 * import { inMicrotask } from "./microtask.ts";
 * const order: string[] = [];
 * inMicrotask(() => order.push("later"));
 * order.push("now");
 * await Promise.resolve();
 * console.log(order); // [ "now", "later" ]
 * ```
 */
export function inMicrotask(callback: () => void): void {
  void settled.then(callback);
}
