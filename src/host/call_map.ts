/** How many emptied sessions a map keeps before it sweeps them. */
const KEPT_EMPTY = 64;

/**
 * Values by Tool call: a session id and the call's sequence, kept as two
 * nested maps so nothing is ever parsed back out of a joined key. A session's
 * map outlives its last call for a while, so calls that come and go one at a
 * time do not allocate a map each; emptied ones are swept in bulk.
 */
export class CallMap<V> {
  #sessions = new Map<string, Map<number, V>>();
  #size = 0;
  #empty = 0;

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
    else if (calls.size === 0) this.#empty--;
    if (!calls.has(call)) this.#size++;
    calls.set(call, value);
  }

  /** Removes a call's value; true when it had one. */
  delete(session: string, call: number): boolean {
    const calls = this.#sessions.get(session);
    if (!calls?.delete(call)) return false;
    this.#size--;
    if (calls.size === 0 && ++this.#empty > KEPT_EMPTY) this.#sweep();
    return true;
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
    this.#empty = 0;
  }

  #sweep(): void {
    for (const [session, calls] of this.#sessions) if (calls.size === 0) this.#sessions.delete(session);
    this.#empty = 0;
  }
}
