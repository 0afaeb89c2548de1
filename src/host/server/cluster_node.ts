import type { Journal } from "../../journal/journal.ts";

/** How long a server waits for another node's health answer before it counts that node as gone. */
const PROBE_MS = 500;

/** The path every Brain server answers its health, with its node id, on. */
export const HEALTH_PATH = "/v1/health";

/** The longest pause between two looks for sessions whose owner's lease lapsed. */
const SWEEP_MAX_MS = 1_000;

/**
 * One server's place in a cluster sharing a journal: it beats its heartbeat
 * (its node id and URL) there every third of `ttlMs`, takes over the sessions
 * whose owner's lease lapsed with calls open (every third of `ttlMs`, at most a
 * second apart), and finds where a session's owner serves from that owner's
 * lease and heartbeat alone.
 */
export class ClusterNode {
  #journal: Journal;
  #node: string;
  #timers: ReturnType<typeof setTimeout>[] = [];
  #running = new Set<Promise<void>>();
  #stopped = false;

  constructor(journal: Journal, node: string) {
    this.#journal = journal;
    this.#node = node;
  }

  /**
   * Beats now and every third of `ttlMs` until {@linkcode stop}, and hands
   * each stranded session to `recover`; a failing store is tried again next time.
   */
  start(url: string, ttlMs: number, recover: (sessionId: string) => Promise<void>): void {
    this.#every(ttlMs / 3, () => this.#journal.beat(this.#node, url, ttlMs));
    this.#every(Math.min(ttlMs / 3, SWEEP_MAX_MS), async () => {
      for (const id of await this.#journal.stranded()) await recover(id).catch(() => {});
    });
  }

  /** Runs `task` now and `ms` after each run ends, until {@linkcode stop}. */
  #every(ms: number, task: () => Promise<void>): void {
    const index = this.#timers.length;
    const run = () => {
      if (this.#stopped) return;
      const running = task().catch(() => {}).then(() => {
        this.#running.delete(running);
        if (!this.#stopped) this.#timers[index] = setTimeout(run, ms);
      });
      this.#running.add(running);
    };
    run();
  }

  /** Stops beating and sweeping; the heartbeat ages out. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timers.forEach(clearTimeout);
    await Promise.all(this.#running);
  }

  /**
   * The URL of the other live server that owns `sessionId`, if one does: the
   * holder of its live lease, by that node's heartbeat, and answering its
   * health as that node. A dead owner's lease may outlive it: no answer means
   * no route, and this server takes the session over once the lease ends.
   */
  async ownerUrl(sessionId: string): Promise<string | undefined> {
    const holder = await this.#journal.holder(sessionId).catch(() => undefined);
    if (!holder || holder.owner === this.#node) return undefined;
    const beat = (await this.#journal.nodes().catch(() => [])).find((beat) => beat.node === holder.owner);
    if (!beat) return undefined;
    return await answersAs(beat.url, holder.owner) ? beat.url : undefined;
  }
}

/** True when the server at `url` answers its health as node `node` within {@linkcode PROBE_MS}. */
async function answersAs(url: string, node: string): Promise<boolean> {
  try {
    const response = await fetch(new URL(HEALTH_PATH, url.replace(/^ws/, "http")), {
      signal: AbortSignal.timeout(PROBE_MS),
    });
    const body = await response.json() as { node?: unknown };
    return response.ok && body.node === node;
  } catch {
    return false;
  }
}
