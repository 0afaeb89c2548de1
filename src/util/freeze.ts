/** Freezes `value` and everything reachable from it; returns it for chaining. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/**
 * A frozen copy of the plain objects and arrays in `value`, so freezing never
 * reaches an object the caller still holds. Other objects (class instances such
 * as a database client) are kept as they are: freezing them would break them.
 */
export function frozenCopy<T>(value: T, copies: Map<object, object> = new Map()): T {
  if (typeof value !== "object" || value === null) return value;
  const prototype = Object.getPrototypeOf(value);
  const plain = Array.isArray(value) || prototype === Object.prototype || prototype === null;
  if (!plain) return value;
  const known = copies.get(value);
  if (known) return known as T;
  const copy = Array.isArray(value) ? [] as unknown[] : Object.create(prototype) as Record<string, unknown>;
  copies.set(value, copy);
  for (const [key, child] of Object.entries(value)) (copy as Record<string, unknown>)[key] = frozenCopy(child, copies);
  return Object.freeze(copy) as T;
}
