/**
 * Values by Tool call: a session id and the call's sequence, kept as two
 * nested maps so nothing is ever parsed back out of a joined key.
 */
export class CallMap<V> {
  #sessions = new Map<string, Map<number, V>>();
  #size = 0;

  /** How many calls have a value. */
  get size(): number {
    return this.#size;
  }

  /** The value of call `call` of `session`. */
  get(session: string, call: number): V | undefined {
    return this.#sessions.get(session)?.get(call);
  }

  /** Sets the value of a call. */
  set(session: string, call: number, value: V): void {
    let calls = this.#sessions.get(session);
    if (!calls) this.#sessions.set(session, calls = new Map());
    if (!calls.has(call)) this.#size++;
    calls.set(call, value);
  }

  /** Removes a call's value; true when it had one. */
  delete(session: string, call: number): boolean {
    const calls = this.#sessions.get(session);
    if (!calls?.delete(call)) return false;
    this.#size--;
    if (calls.size === 0) this.#sessions.delete(session);
    return true;
  }

  /** Removes every call of `session`. */
  deleteSession(session: string): void {
    this.#size -= this.#sessions.get(session)?.size ?? 0;
    this.#sessions.delete(session);
  }

  /** Every call with its value. */
  *entries(): IterableIterator<[session: string, call: number, value: V]> {
    for (const [session, calls] of this.#sessions) for (const [call, value] of calls) yield [session, call, value];
  }

  /** Every value. */
  *values(): IterableIterator<V> {
    for (const calls of this.#sessions.values()) yield* calls.values();
  }

  /** Removes everything. */
  clear(): void {
    this.#sessions.clear();
    this.#size = 0;
  }
}
