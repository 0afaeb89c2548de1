/** Hex SHA-256 of `bytes`: the content address of a Component's bytes. */
export async function contentHash(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)).toHex();
}
