const encoder = new TextEncoder();

/**
 * The SHA-256 of a host token as lowercase hex: the only form of a token Brain stores.
 *
 * @example
 * ```ts
 * import { hashToken } from "@aexhq/brain";
 * console.log((await hashToken("secret")).length); // 64
 * ```
 */
export async function hashToken(token: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(token)));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Compares two token hashes in time that does not depend on where they differ. */
export function sameHash(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let index = 0; index < a.length; index++) difference |= a.charCodeAt(index) ^ b.charCodeAt(index);
  return difference === 0;
}
