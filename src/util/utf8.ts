/**
 * The number of bytes `TextEncoder` would produce for `text`, counted without
 * encoding it: a lone surrogate counts as the 3 bytes of U+FFFD.
 */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) continue;
    if (unit < 0x800) bytes += 1;
    else if (unit >= 0xd800 && unit <= 0xdbff && isLowSurrogate(text.charCodeAt(index + 1))) {
      bytes += 2; // two units, four bytes
      index++;
    } else bytes += 2;
  }
  return bytes;
}

/** True for a UTF-16 low (trailing) surrogate code unit. */
export function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}
