/** Freezes `value` and everything reachable from it; returns it for chaining. Any depth: nothing recurses. */
export function deepFreeze<T>(value: T): T {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next !== "object" || next === null || Object.isFrozen(next)) continue;
    Object.freeze(next);
    for (const child of Object.values(next)) pending.push(child);
  }
  return value;
}

/**
 * A frozen copy of the plain objects and arrays in `value`, so freezing never
 * reaches an object the caller still holds. Other objects (class instances such
 * as a database client) are kept as they are: freezing them would break them.
 * Shared and cyclic parts stay shared and cyclic; any depth: nothing recurses.
 */
export function frozenCopy<T>(value: T): T {
  const copies = new Map<object, Record<string, unknown>>();
  // Each copy with what it copies, filled in turn; filling one adds the copies of its children.
  const filling: [source: object, copy: Record<string, unknown>][] = [];
  const copyOf = (child: unknown): unknown => {
    if (typeof child !== "object" || child === null) return child;
    const prototype = Object.getPrototypeOf(child);
    if (!Array.isArray(child) && prototype !== Object.prototype && prototype !== null) return child;
    let copy = copies.get(child);
    if (!copy) {
      copy = Array.isArray(child) ? [] as unknown as Record<string, unknown> : Object.create(prototype);
      copies.set(child, copy!);
      filling.push([child, copy!]);
    }
    return copy;
  };
  const root = copyOf(value);
  for (let index = 0; index < filling.length; index++) {
    const [source, copy] = filling[index];
    for (const [key, child] of Object.entries(source)) {
      // Defined, not assigned: assigning `__proto__` would set the copy's prototype instead.
      Object.defineProperty(copy, key, { value: copyOf(child), enumerable: true, writable: true, configurable: true });
    }
  }
  for (const [, copy] of filling) Object.freeze(copy);
  return root as T;
}
