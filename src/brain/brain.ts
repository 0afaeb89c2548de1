import type { Journal } from "../journal/journal.ts";
import { MemoryJournal } from "../journal/memory.ts";
import type { SessionMeta } from "../journal/records.ts";
import { BrainError } from "../outcome/errors.ts";
import { BRAIN_MAX_EMITTED_BYTES } from "../session/activation.ts";
import { Session } from "../session/session.ts";
import type { PlacedTool } from "../tool/tool.ts";
import { checkReattachment } from "./reattach.ts";
import type { AllowList } from "../env/allow_list.ts";
import { bindEnvironments } from "../env/bindings.ts";

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** Options for an embedded Brain. */
export interface BrainOptions {
  /** Where sessions and records live; an in-memory journal by default. */
  journal?: Journal;
  /** Bytes one activation may emit across results and events; {@linkcode BRAIN_MAX_EMITTED_BYTES} by default. */
  maxEmittedBytes?: number;
  /** What this Brain may grant to Brain-hosted Environments; nothing by default. */
  allow?: AllowList;
}

/** Options for creating a session. */
export interface CreateSessionOptions {
  /** Placed Tools; names must be unique. */
  tools?: readonly PlacedTool[];
  /** The session id; a random UUID by default. */
  id?: string;
}

/** The `brain.sessions` API. */
export interface Sessions {
  /** Creates a session with its Tools; non-host implementations are admitted first. */
  create(options?: CreateSessionOptions): Promise<Session>;
  /** Opens an existing session; supplying the original Tools restores their handlers. */
  get(id: string, options?: { tools?: readonly PlacedTool[] }): Promise<Session>;
  /** Ends a session and removes it with its records. */
  delete(id: string): Promise<void>;
  /** Metadata of every stored session. */
  list(): Promise<SessionMeta[]>;
}

/**
 * An embedded Brain: sessions, their journal, and the execution of their Tool
 * calls in this process.
 *
 * @example
 * ```ts
 * import { Brain, tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const add = tool({
 *   name: "add",
 *   description: "Add two numbers.",
 *   input: z.object({ a: z.number(), b: z.number() }),
 *   run: ({ a, b }, ctx) => ctx.finish(a + b),
 * });
 * const brain = new Brain();
 * try {
 *   const session = await brain.sessions.create({ tools: [add()] });
 *   const end = await session.call("add", { a: 1, b: 2 });
 *   console.log(end.outcome); // { status: "ok", value: 3 }
 * } finally {
 *   await brain.close();
 * }
 * ```
 */
export class Brain {
  /** Creates, opens and deletes sessions. */
  readonly sessions: Sessions;
  #journal: Journal;
  #maxEmittedBytes: number;
  #allow: AllowList | undefined;
  #live = new Set<Session>();
  #closed = false;

  /** Creates an embedded Brain over `options.journal` (in memory by default). */
  constructor(options: BrainOptions = {}) {
    this.#journal = options.journal ?? new MemoryJournal();
    this.#maxEmittedBytes = options.maxEmittedBytes ?? BRAIN_MAX_EMITTED_BYTES;
    this.#allow = options.allow;
    this.sessions = Object.freeze({
      create: (create?: CreateSessionOptions) => this.#create(create),
      get: (id: string, get?: { tools?: readonly PlacedTool[] }) => this.#get(id, get?.tools),
      delete: (id: string) => this.#delete(id),
      list: () => this.#journal.listSessions(),
    });
  }

  /** Opens a Brain; the same as the constructor, as a promise for durable journals that open asynchronously. */
  static open(options: BrainOptions = {}): Promise<Brain> {
    return Promise.resolve(new Brain(options));
  }

  /** Ends every open session handle, then closes the journal. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#live].map((session) => session.end()));
    await this.#journal.close();
  }

  async #create({ tools = [], id = crypto.randomUUID() }: CreateSessionOptions = {}): Promise<Session> {
    this.#assertOpen();
    if (typeof id !== "string" || !SESSION_ID.test(id)) {
      throw new BrainError(
        "invalid_argument",
        `a session id must match ${SESSION_ID.source}, got ${JSON.stringify(id)}`,
      );
    }
    const names = new Set<string>();
    for (const placed of tools) {
      if (names.has(placed.tool.name)) {
        throw new BrainError("duplicate_tool", `tool ${placed.tool.name} is placed twice in one session`);
      }
      names.add(placed.tool.name);
    }
    if (await this.#journal.getSession(id)) throw new BrainError("session_exists", `session ${id} already exists`);
    const workspaces = await this.#admit(id, tools);
    const meta: SessionMeta = { id, createdAt: Date.now(), tools: tools.map((placed) => placed.advertised) };
    await this.#journal.createSession(meta);
    return this.#open(meta, tools, workspaces);
  }

  async #get(id: string, tools: readonly PlacedTool[] = []): Promise<Session> {
    this.#assertOpen();
    const meta = await this.#journal.getSession(id);
    if (!meta) throw new BrainError("session_not_found", `no session ${id}`);
    if (tools.length > 0) checkReattachment(id, meta.tools, tools);
    return this.#open(meta, tools, await this.#admit(id, tools));
  }

  async #delete(id: string): Promise<void> {
    this.#assertOpen();
    await Promise.allSettled([...this.#live].filter((session) => session.id === id).map((session) => session.end()));
    await this.#journal.deleteSession(id);
  }

  async #admit(id: string, tools: readonly PlacedTool[]): Promise<Map<string, string>> {
    const workspaces = await bindEnvironments(id, tools, this.#allow);
    for (const { implementation, env, options } of tools) {
      await implementation?.admit({ env, options, workspace: env && workspaces.get(env.name), allow: this.#allow });
    }
    return workspaces;
  }

  #open(meta: SessionMeta, tools: readonly PlacedTool[], workspaces: Map<string, string>): Session {
    const session = new Session({
      journal: this.#journal,
      meta,
      tools,
      workspaces,
      allow: this.#allow,
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
