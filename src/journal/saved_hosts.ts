import type { Journal } from "./journal.ts";

/** How long the journal's list of hosts is reused before it is read again. */
export const SAVED_HOSTS_MS = 1_000;

/**
 * The hosts a journal's sessions name, each with the token hash its sessions keep, read
 * at most once per {@linkcode SAVED_HOSTS_MS}: requests naming hosts that do not exist
 * cannot make a server scan its journal on every request.
 */
export class SavedHosts {
  #journal: Pick<Journal, "listSessions">;
  #saved: { at: number; hosts: Promise<Map<string, string>> } | undefined;

  /** Reads the hosts of `journal`'s sessions when first asked. */
  constructor(journal: Pick<Journal, "listSessions">) {
    this.#journal = journal;
  }

  /** The token hash the sessions of host `id` keep, or undefined when no session names it. */
  async tokenHash(id: string): Promise<string | undefined> {
    return (await this.#hosts()).get(id);
  }

  #hosts(): Promise<Map<string, string>> {
    if (this.#saved && performance.now() - this.#saved.at < SAVED_HOSTS_MS) return this.#saved.hosts;
    const hosts = this.#journal.listSessions().then((sessions) => {
      const saved = new Map<string, string>();
      for (const { host } of sessions) if (host && !saved.has(host.id)) saved.set(host.id, host.tokenHash);
      return saved;
    });
    this.#saved = { at: performance.now(), hosts };
    hosts.catch(() => this.#saved = undefined);
    return hosts;
  }
}
