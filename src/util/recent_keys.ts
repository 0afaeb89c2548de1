/** The last `max` keys added, oldest forgotten first: what ran recently, in bounded memory. */
export class RecentKeys {
  #keys = new Set<string>();
  #max: number;

  /** Remembers at most `max` keys. */
  constructor(max: number) {
    this.#max = max;
  }

  /** True when `key` was added and not forgotten since. */
  has(key: string): boolean {
    return this.#keys.has(key);
  }

  /** Remembers `key`, forgetting the oldest key past `max`. */
  add(key: string): void {
    this.#keys.add(key);
    if (this.#keys.size > this.#max) this.#keys.delete(this.#keys.values().next().value!);
  }
}
