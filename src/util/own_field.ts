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
