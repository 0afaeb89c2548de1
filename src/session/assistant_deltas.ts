import type { Journal } from "../journal/journal.ts";

/**
 * Journals the reply fragments of one Agentloop model call as
 * `assistant_delta` records, in order. Fragments that arrive while a commit is
 * in flight are joined into the next record, so a fast stream costs one commit
 * per journal round trip, not one per token.
 */
export class AssistantDeltas {
  #journal: Journal;
  #sessionId: string;
  #modelCall: number;
  #pending = "";
  #flushing: Promise<void> | undefined;
  #closed = false;

  constructor(journal: Journal, sessionId: string, modelCall: number) {
    this.#journal = journal;
    this.#sessionId = sessionId;
    this.#modelCall = modelCall;
  }

  /** Queues one fragment; empty fragments are dropped. */
  add = (text: string): void => {
    if (this.#closed || typeof text !== "string" || text === "") return;
    this.#pending += text;
    this.#flushing ??= this.#flush();
  };

  /**
   * Takes no more fragments (a late one from an interrupted stream is dropped)
   * and resolves once the queued ones are committed, or a commit failed.
   */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#flushing;
  }

  async #flush(): Promise<void> {
    try {
      while (this.#pending !== "") {
        const content = this.#pending;
        this.#pending = "";
        await this.#journal.append(this.#sessionId, [{ kind: "assistant_delta", modelCall: this.#modelCall, content }]);
      }
    } catch {
      // The call's own finish commit reports a journal that stopped accepting records.
      this.#closed = true;
    } finally {
      this.#flushing = undefined;
    }
  }
}
