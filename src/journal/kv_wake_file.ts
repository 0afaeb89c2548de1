/**
 * Cross-process commit wakes for one KV file. Deno KV's `watch` does not see
 * commits made by another process on a local file (denoland/deno#21640), and
 * an inotify event on SQLite's WAL can arrive before the commit it belongs to
 * is visible. So a writer rewrites a small sidecar file `<path>.wake` after its
 * commit resolved, and readers watch that file (`Deno.watchFs`, event-driven):
 * a wake never runs ahead of the commit it announces.
 *
 * A writer rewrites the sidecar only while another journal of the file follows
 * it: each following journal keeps a file named after itself in
 * `<path>.followers/`, which writers watch. A writer that learns of a new
 * follower rewrites the sidecar once at once, which covers every commit it made
 * before it knew. Commits coalesce: at most one rewrite is in flight, and one
 * more follows it when commits arrived meanwhile. Same-process subscribers of
 * the writing journal never wait for the sidecar; their own journal wakes them.
 * Without permission for the sidecar files, writes and watches of them are skipped.
 *
 * A commit can go unannounced: its writer died between the commit and the
 * rewrite (SIGKILL), or had no permission for the sidecar, or this process
 * could not watch it (no permission, the system's limit of watches). So while
 * anything follows, the sidecar also wakes its followers every
 * {@linkcode UNANNOUNCED_WAKE_MS} to read again: such a commit is seen late,
 * never lost from view.
 */
export class WakeFile {
  #path: string;
  #followers: string;
  /** This journal's entry in the followers directory, present while it follows. */
  #self: string;
  #watcher: Deno.FsWatcher | undefined;
  #watching: Promise<void> | undefined;
  #users = 0;
  #changed = Promise.withResolvers<true>();
  /** Other journals following the file: `undefined` until known, so a writer rewrites in doubt. */
  #others: number | undefined;
  #followersWatched = false;
  #followersWatcher: Deno.FsWatcher | undefined;
  #followersWatching: Promise<void> | undefined;
  #writing: Promise<void> | undefined;
  #again = false;
  /** A commit went unannounced because nobody followed: a follower that registered since must still hear of it. */
  #unannounced = false;
  #closed = false;
  /** Wakes the followers now and then, while any follows, for commits no rewrite announced. */
  #poll: ReturnType<typeof setInterval> | undefined;

  /** The sidecar of the KV file at `kvPath`. */
  constructor(kvPath: string) {
    this.#path = `${kvPath}.wake`;
    this.#followers = `${kvPath}.followers`;
    this.#self = crypto.randomUUID();
  }

  /** Announces a commit that has resolved, when another journal follows the file; never fails the commit. */
  touch(): void {
    if (this.#closed) return;
    if (!this.#followersWatched) this.#watchFollowers();
    if (this.#others === 0) {
      this.#unannounced = true;
      return;
    }
    this.#unannounced = false;
    if (this.#writing) {
      this.#again = true;
      return;
    }
    this.#writing = this.#write();
  }

  async #write(): Promise<void> {
    do {
      this.#again = false;
      await Deno.writeFile(this.#path, WAKE).catch(() => {});
    } while (this.#again && !this.#closed);
    this.#writing = undefined;
  }

  /** Keeps `#others` up to date from the followers directory, and wakes each new follower once. */
  #watchFollowers(): void {
    this.#followersWatched = true;
    try {
      Deno.mkdirSync(this.#followers, { recursive: true });
      const watcher = Deno.watchFs(this.#followers, { recursive: false });
      this.#followersWatcher = watcher;
      this.#count();
      this.#followersWatching = (async () => {
        for await (const event of watcher) {
          const before = this.#others ?? 0;
          this.#count();
          if (event.kind === "create" || (this.#others ?? 1) > before) this.touch();
        }
      })().catch(() => {});
    } catch {
      // No permission for the followers directory: rewrite after every commit, as if someone followed.
      this.#others = undefined;
    }
  }

  #count(): void {
    try {
      let others = 0;
      for (const entry of Deno.readDirSync(this.#followers)) if (entry.name !== this.#self) others++;
      this.#others = others;
    } catch {
      this.#others = undefined;
    }
  }

  /** Resolves at the next change of the sidecar after this call. */
  next(): Promise<true> {
    return this.#changed.promise;
  }

  /** Starts watching the sidecar for one more subscription, and tells writers this journal follows. */
  acquire(): void {
    if (this.#users++ > 0) return;
    this.#poll = setInterval(() => this.#wake(), UNANNOUNCED_WAKE_MS);
    // Followers keep their process alive by their own means; the poll alone does not.
    Deno.unrefTimer(this.#poll);
    try {
      Deno.writeFileSync(this.#path, new Uint8Array(), { append: true });
    } catch {
      // A reader without write permission can still watch a sidecar some writer created.
    }
    try {
      const watcher = Deno.watchFs(this.#path, { recursive: false });
      this.#watcher = watcher;
      this.#watching = (async () => {
        for await (const _event of watcher) this.#wake();
      })().catch(() => {});
    } catch {
      // No permission for the sidecar: commits of other processes wake this one only on its own next wake.
    }
    try {
      Deno.mkdirSync(this.#followers, { recursive: true });
      Deno.writeFileSync(`${this.#followers}/${this.#self}`, new Uint8Array());
    } catch {
      // Writers that cannot see this follower rewrite the sidecar after every commit anyway.
    }
  }

  #wake(): void {
    const woken = this.#changed;
    this.#changed = Promise.withResolvers();
    woken.resolve(true);
  }

  /** Stops watching once the last subscription released it. */
  async release(): Promise<void> {
    if (--this.#users > 0) return;
    await this.#stop();
  }

  /**
   * Stops watching and waits for the pending rewrite; announces unannounced
   * commits once more if a follower registered that this writer has not heard of yet.
   */
  async close(): Promise<void> {
    if (this.#unannounced && this.#followersWatched) {
      this.#count();
      if (this.#others !== 0) this.touch();
    }
    this.#closed = true;
    this.#users = 0;
    await this.#stop();
    const watcher = this.#followersWatcher;
    this.#followersWatcher = undefined;
    closeQuietly(watcher);
    await this.#followersWatching;
    await this.#writing;
  }

  async #stop(): Promise<void> {
    clearInterval(this.#poll);
    this.#poll = undefined;
    await Deno.remove(`${this.#followers}/${this.#self}`).catch(() => {});
    const watcher = this.#watcher;
    this.#watcher = undefined;
    if (!watcher) return;
    closeQuietly(watcher);
    await this.#watching;
  }
}

function closeQuietly(watcher: Deno.FsWatcher | undefined): void {
  try {
    watcher?.close();
  } catch {
    // Already closed.
  }
}

const WAKE = new Uint8Array([1]);
/** How often followers read again for commits whose writer could not announce them. */
const UNANNOUNCED_WAKE_MS = 1_000;
