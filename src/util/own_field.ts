/**
 * Sets `key` on `object` as an own enumerable data field, `__proto__` included
 * (which assignment would take as the prototype instead).
 *
 * @example
 * ```ts
 * import { setOwnField } from "./own_field.ts";
 * const copy: Record<string, unknown> = {};
 * setOwnField(copy, "__proto__", { polluted: true });
 * console.log(Object.keys(copy), ({} as Record<string, unknown>).polluted); // [ "__proto__" ] undefined
 * ```
 */
export function setOwnField(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  } else object[key] = value;
}

const hasOwnProperty = Object.prototype.hasOwnProperty;

/**
 * `Object.hasOwn`, through `hasOwnProperty`: inside a `for in` over the same
 * object, V8 knows the answer from the loop's key cache, where it calls
 * `Object.hasOwn` for each key.
 *
 * @example
 * ```ts
 * import { hasOwnField } from "./own_field.ts";
 * const inherited = Object.create({ shared: 1 });
 * inherited.own = 2;
 * for (const key in inherited) console.log(key, hasOwnField(inherited, key)); // own true, then shared false
 * ```
 */
export function hasOwnField(object: object, key: string): boolean {
  return hasOwnProperty.call(object, key);
}
