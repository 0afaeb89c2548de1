import type { CommitWakes } from "./follow.ts";

/**
 * Tells waiters that a session has new commits. A waiter takes `next(sessionId)`
 * before it reads, so a commit between the read and the wait is never missed.
 */
export class CommitNotifier {
  #waiters = new Map<string, PromiseWithResolvers<boolean>>();
  #closed = false;

  /** True once the notifier has closed: its journal is closing. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Resolves true on the session's next commit, false when the notifier closes. */
  next(sessionId: string): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    let waiter = this.#waiters.get(sessionId);
    if (!waiter) {
      waiter = Promise.withResolvers<boolean>();
      this.#waiters.set(sessionId, waiter);
    }
    return waiter.promise;
  }

  /** The sessions someone waits on. */
  waiting(): string[] {
    return [...this.#waiters.keys()];
  }

  /** The wakes of one subscription to `sessionId` that only this notifier wakes. */
  wakes(sessionId: string): CommitWakes {
    return { next: () => this.next(sessionId), closed: () => this.#closed, close: () => {} };
  }

  /** Wakes every waiter of `sessionId`. */
  notify(sessionId: string): void {
    const waiter = this.#waiters.get(sessionId);
    if (!waiter) return;
    this.#waiters.delete(sessionId);
    waiter.resolve(true);
  }

  /** Wakes every waiter of every session, as after wakes that may have been missed: each reads again. */
  notifyAll(): void {
    const waiters = [...this.#waiters.values()];
    this.#waiters.clear();
    for (const waiter of waiters) waiter.resolve(true);
  }

  /** Wakes every waiter with false; later `next` calls resolve false at once. */
  close(): void {
    this.#closed = true;
    for (const waiter of this.#waiters.values()) waiter.resolve(false);
    this.#waiters.clear();
  }
}
