/** The strings a session's records share: each packed as its number in the table. */
export class StringTable {
  readonly #numbers = new Map<string, number>();
  readonly #strings: string[] = [];

  /** The number of `text` in the table, added when there is room for it; -1 when there is none. */
  numberOf(text: string): number {
    if (text.length > STRING_TABLE_TEXT_MAX) return -1;
    const known = this.#numbers.get(text);
    if (known !== undefined) return known;
    if (this.#strings.length >= STRING_TABLE_MAX) return -1;
    this.#numbers.set(text, this.#strings.length);
    this.#strings.push(text);
    return this.#strings.length - 1;
  }

  /** The string numbered `number`. */
  at(number: number): string {
    return this.#strings[number];
  }
}

/** Only short strings are shared (names, kinds, statuses), and at most this many per session. */
const STRING_TABLE_TEXT_MAX = 32;
const STRING_TABLE_MAX = 4096;
