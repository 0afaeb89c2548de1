/**
 * A set of positive integers, such as the sequences of a session's open calls,
 * kept in one open-addressed table: adding and deleting allocate nothing until
 * the table grows. (A `Set` that empties reallocates its table each time, and a
 * call set empties after nearly every call.)
 *
 * @example
 * ```ts
 * import { IntSet } from "./int_set.ts";
 * const open = new IntSet();
 * open.add(3);
 * open.delete(3);
 * console.log(open.has(3), open.size); // false 0
 * ```
 */
export class IntSet {
  /** The table: 0 marks an empty slot; a value sits at its home slot or after it, with no gap between. */
  #slots: number[] = new Array(MIN_SLOTS).fill(0);
  #size = 0;

  /** How many integers the set holds. */
  get size(): number {
    return this.#size;
  }

  /** True when `value` is in the set. */
  has(value: number): boolean {
    // 0 marks an empty slot, so it is never in the set.
    return value !== 0 && this.#slots[this.#find(value)] === value;
  }

  /** Adds `value`, a positive safe integer. */
  add(value: number): void {
    if (!(Number.isSafeInteger(value) && value > 0)) throw new RangeError(`not a positive integer: ${value}`);
    if ((this.#size + 1) * 2 > this.#slots.length) this.#resize(this.#slots.length * 2);
    const index = this.#find(value);
    if (this.#slots[index] === value) return;
    this.#slots[index] = value;
    this.#size++;
  }

  /** Removes `value`; false when it was not in the set. */
  delete(value: number): boolean {
    const slots = this.#slots;
    const mask = slots.length - 1;
    let hole = this.#find(value);
    if (slots[hole] !== value) return false;
    // Backward shift: move each later value of the run into the hole when its home slot allows, so no gap splits a run.
    for (let next = (hole + 1) & mask; slots[next] !== 0; next = (next + 1) & mask) {
      const home = slots[next] & mask;
      const movable = hole <= next ? home <= hole || home > next : home <= hole && home > next;
      if (movable) {
        slots[hole] = slots[next];
        hole = next;
      }
    }
    slots[hole] = 0;
    this.#size--;
    return true;
  }

  /** The integers in ascending order. */
  values(): number[] {
    return this.#slots.filter((value) => value !== 0).sort((a, b) => a - b);
  }

  /** The slot holding `value`, or the empty slot where it would go. */
  #find(value: number): number {
    const slots = this.#slots;
    const mask = slots.length - 1;
    let index = value & mask;
    while (slots[index] !== 0 && slots[index] !== value) index = (index + 1) & mask;
    return index;
  }

  #resize(length: number): void {
    const values = this.#slots.filter((value) => value !== 0);
    this.#slots = new Array(length).fill(0);
    for (const value of values) this.#slots[this.#find(value)] = value;
  }
}

/** The smallest table: a power of two, as every table is. */
const MIN_SLOTS = 8;
