import type { Journal } from "../journal/journal.ts";
import { MemoryJournal } from "../journal/memory.ts";
import type { SessionMeta } from "../journal/records.ts";
import { BrainError } from "../outcome/errors.ts";
import { BRAIN_MAX_EMITTED_BYTES } from "../session/activation.ts";
import { Session } from "../session/session.ts";
import type { PlacedTool } from "../tool/tool.ts";
import type { BrainBackend, CreateSessionOptions } from "./backend.ts";
import { checkReattachment } from "./reattach.ts";
import { checkUniqueTools } from "./unique_tools.ts";

/** Options for an embedded Brain. */
export interface BrainOptions {
  /** Where sessions and records live; an in-memory journal by default. */
  journal?: Journal;
  /** Bytes one activation may emit across results and events; {@linkcode BRAIN_MAX_EMITTED_BYTES} by default. */
  maxEmittedBytes?: number;
}

/** Sessions, their journal and the execution of their calls, in this process. */
export class EmbeddedBackend implements BrainBackend {
  /** The journal every session of this backend lives in. */
  readonly journal: Journal;
  #maxEmittedBytes: number;
  #live = new Set<Session>();
  #closed = false;

  constructor(options: BrainOptions = {}) {
    this.journal = options.journal ?? new MemoryJournal();
    this.#maxEmittedBytes = options.maxEmittedBytes ?? BRAIN_MAX_EMITTED_BYTES;
  }

  /** Creates a session; a Brain server passes the registered `host` that owns it. */
  async create(
    { tools = [], id = crypto.randomUUID() }: CreateSessionOptions = {},
    host?: SessionMeta["host"],
  ): Promise<Session> {
    this.#assertOpen();
    checkUniqueTools(tools);
    for (const placed of tools) await placed.implementation?.admit({ env: placed.env, options: placed.options });
    const meta: SessionMeta = { id, createdAt: Date.now(), tools: tools.map((placed) => placed.advertised) };
    if (host) meta.host = host;
    await this.journal.createSession(meta);
    return this.#open(meta, tools);
  }

  async get(id: string, tools: readonly PlacedTool[] = []): Promise<Session> {
    this.#assertOpen();
    const meta = await this.journal.getSession(id);
    if (!meta) throw new BrainError("session_not_found", `no session ${id}`);
    if (tools.length > 0) checkReattachment(id, meta.tools, tools);
    for (const placed of tools) await placed.implementation?.admit({ env: placed.env, options: placed.options });
    return this.#open(meta, tools);
  }

  async delete(id: string): Promise<void> {
    this.#assertOpen();
    await Promise.allSettled([...this.#live].filter((session) => session.id === id).map((session) => session.end()));
    await this.journal.deleteSession(id);
  }

  list(): Promise<SessionMeta[]> {
    return this.journal.listSessions();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#live].map((session) => session.end()));
    await this.journal.close();
  }

  #open(meta: SessionMeta, tools: readonly PlacedTool[]): Session {
    const session = new Session({
      journal: this.journal,
      meta,
      tools,
      maxEmittedBytes: this.#maxEmittedBytes,
      onEnd: (ended) => this.#live.delete(ended),
    });
    this.#live.add(session);
    return session;
  }

  #assertOpen(): void {
    if (this.#closed) throw new BrainError("session_closed", "this Brain is closed");
  }
}
