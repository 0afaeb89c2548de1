/**
 * Compares two strings without stopping at the first difference, so timing does
 * not reveal how much of a secret matched. Every token or token-hash check uses it.
 */
export function sameText(a: string, b: string): boolean {
  let difference = a.length ^ b.length;
  for (let index = 0; index < Math.max(a.length, b.length); index++) {
    difference |= (a.charCodeAt(index) | 0) ^ (b.charCodeAt(index) | 0);
  }
  return difference === 0;
}
