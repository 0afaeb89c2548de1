import { keys, storedHost } from "./kv_codec.ts";
import { commitAtomic } from "./kv_write.ts";

/** Host counts one atomic commit sets while a file's sessions are first counted. */
const COUNTS_PER_COMMIT = 500;

/**
 * Makes sure the file's sessions are counted per host, once: a file written
 * before host counts (or never holding a host's session) has every session
 * counted under its host, each host's count set in commits that hold only while
 * no other process has finished counting, then the mark that the counts are
 * kept. Creates and deletes of host sessions wait for the mark, so none is
 * missed by a count or counted twice.
 */
export async function countHostSessions(kv: Deno.Kv): Promise<void> {
  const counted = await kv.get<true>(keys.hostsCounted());
  if (counted.versionstamp !== null) return;
  const counts = new Map<string, number>();
  for await (const entry of kv.list<Uint8Array>({ prefix: keys.sessions() })) {
    const host = storedHost(entry.value);
    if (host !== undefined) counts.set(host, (counts.get(host) ?? 0) + 1);
  }
  const entries = [...counts];
  for (let from = 0; from < entries.length; from += COUNTS_PER_COMMIT) {
    const result = await commitAtomic(kv, (op) => {
      op.check(counted);
      for (const [host, count] of entries.slice(from, from + COUNTS_PER_COMMIT)) op.set(keys.hostSessions(host), count);
    });
    // Another process finished counting first: its counts, kept since, stand.
    if (!result.ok) return;
  }
  await commitAtomic(kv, (op) => op.check(counted).set(keys.hostsCounted(), true));
}
