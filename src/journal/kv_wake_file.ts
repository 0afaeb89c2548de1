/**
 * Cross-process commit wakes for one KV file. Deno KV's `watch` does not see
 * commits made by another process on a local file (denoland/deno#21640), and
 * an inotify event on SQLite's WAL can arrive before the commit it belongs to
 * is visible. So each writer rewrites a small sidecar file `<path>.wake`
 * after its commit resolved, and readers watch that file (`Deno.watchFs`,
 * event-driven): a wake never runs ahead of the commit it announces.
 * Without permission for the sidecar, writes and watches of it are skipped.
 */
export class WakeFile {
  #path: string;
  #watcher: Deno.FsWatcher | undefined;
  #watching: Promise<void> | undefined;
  #users = 0;
  #changed = Promise.withResolvers<true>();
  #touching = new Set<Promise<void>>();

  /** The sidecar of the KV file at `kvPath`. */
  constructor(kvPath: string) {
    this.#path = `${kvPath}.wake`;
  }

  /** Announces a commit that has resolved; never fails the commit. */
  touch(): void {
    const touched = Deno.writeFile(this.#path, WAKE).catch(() => {});
    this.#touching.add(touched);
    touched.finally(() => this.#touching.delete(touched));
  }

  /** Resolves at the next change of the sidecar after this call. */
  next(): Promise<true> {
    return this.#changed.promise;
  }

  /** Starts watching the sidecar for one more subscription. */
  acquire(): void {
    if (this.#users++ > 0) return;
    try {
      Deno.writeFileSync(this.#path, new Uint8Array(), { append: true });
    } catch {
      // A reader without write permission can still watch a sidecar some writer created.
    }
    try {
      const watcher = Deno.watchFs(this.#path, { recursive: false });
      this.#watcher = watcher;
      this.#watching = (async () => {
        for await (const _event of watcher) {
          const woken = this.#changed;
          this.#changed = Promise.withResolvers();
          woken.resolve(true);
        }
      })().catch(() => {});
    } catch {
      // No permission for the sidecar: commits of other processes wake this one only on its own next wake.
    }
  }

  /** Stops watching once the last subscription released it. */
  async release(): Promise<void> {
    if (--this.#users > 0) return;
    await this.#stop();
  }

  /** Stops watching and waits for every pending touch. */
  async close(): Promise<void> {
    this.#users = 0;
    await this.#stop();
    await Promise.all(this.#touching);
  }

  async #stop(): Promise<void> {
    const watcher = this.#watcher;
    this.#watcher = undefined;
    if (!watcher) return;
    try {
      watcher.close();
    } catch {
      // Already closed.
    }
    await this.#watching;
  }
}

const WAKE = new Uint8Array([1]);
