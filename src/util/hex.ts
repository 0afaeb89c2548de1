/** The value of each lowercase hex digit by its code unit, -1 for every other code unit. */
export const HEX_VALUES: Int8Array = new Int8Array(0x10000).fill(-1);
for (let digit = 0; digit < 16; digit++) HEX_VALUES[digit.toString(16).charCodeAt(0)] = digit;

/** Each byte as two lowercase hex digits. */
export const HEX_PAIRS: readonly string[] = Array.from(
  { length: 256 },
  (_, byte) => byte.toString(16).padStart(2, "0"),
);
