import type { CommitWakes } from "./follow.ts";

/**
 * Wakes one subscription whenever the KV entry at `key` changes, whoever wrote
 * it (this connection, another one in this process, or another process), and
 * whenever `local` resolves. Deno KV reports a change only after its commit, so
 * a wake never runs ahead of what a read can see; the watch's first report (the
 * value it started from) is one spurious wake.
 */
export function watchKey(
  kv: Deno.Kv,
  key: Deno.KvKey,
  local: () => Promise<boolean>,
): Pick<CommitWakes, "next" | "close"> {
  const reader = kv.watch([key]).getReader();
  let changed = Promise.withResolvers<boolean>();
  changed.promise.catch(() => {});
  const pumped = (async () => {
    try {
      while (!(await reader.read()).done) {
        const woken = changed;
        changed = Promise.withResolvers();
        changed.promise.catch(() => {});
        woken.resolve(true);
      }
      changed.resolve(false);
    } catch (error) {
      changed.reject(error);
    }
  })();
  return {
    next: () => Promise.race([local(), changed.promise]),
    close: async () => {
      await reader.cancel().catch(() => {});
      await pumped;
    },
  };
}
