/** Something a {@linkcode SlotList} holds: it keeps its index in the list, -1 while in none. */
export interface Slotted {
  /** Its index in the list holding it, or -1. */
  slot: number;
}

/**
 * An unordered list whose members know their index, so adding and deleting
 * one costs a few stores and allocates nothing until the list grows (a `Set`
 * that empties reallocates its table each time): for the open calls of a
 * session, which come and go with every call.
 *
 * @example
 * ```ts
 * import { SlotList } from "./slot_list.ts";
 * const list = new SlotList<{ slot: number }>();
 * const member = { slot: -1 };
 * list.add(member);
 * list.delete(member);
 * console.log(list.values().length, member.slot); // 0 -1
 * ```
 */
export class SlotList<T extends Slotted> {
  #members: (T | undefined)[] = [];
  #count = 0;

  /** Adds `member`, which is in no list. */
  add(member: T): void {
    member.slot = this.#count;
    this.#members[this.#count++] = member;
  }

  /** Removes `member` if this list holds it: the last member takes its index. */
  delete(member: T): void {
    const slot = member.slot;
    if (slot < 0 || this.#members[slot] !== member) return;
    const last = this.#members[--this.#count]!;
    this.#members[slot] = last;
    last.slot = slot;
    this.#members[this.#count] = undefined;
    member.slot = -1;
  }

  /** The members, in no particular order. */
  values(): T[] {
    return this.#members.slice(0, this.#count) as T[];
  }
}
