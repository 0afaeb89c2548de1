import type { Journal } from "../journal/journal.ts";
import { MemoryJournal } from "../journal/memory.ts";
import type { SessionMeta } from "../journal/records.ts";
import { BrainError } from "../outcome/errors.ts";
import { BRAIN_MAX_EMITTED_BYTES, BRAIN_MAX_MODEL_CALLS } from "../session/activation.ts";
import { Session } from "../session/session.ts";
import type { PlacedTool } from "../tool/tool.ts";
import { checkReattachment } from "./reattach.ts";
import { Agentloop, type AgentloopOptions } from "../agentloop/agentloop.ts";
import type { SessionModel } from "../model/types.ts";
import { ModelCaller } from "../session/model_call.ts";
import { endOrphanedCalls } from "./recover.ts";
import { KvJournal } from "../journal/kv.ts";
import { type HostCredentials, registerHost, verifyHost } from "../host/token.ts";
import type { AllowList } from "../env/allow_list.ts";
import { bindEnvironments } from "../env/bindings.ts";

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** Options for an embedded Brain. */
export interface BrainOptions {
  /** Where sessions and records live; an in-memory journal by default. */
  journal?: Journal;
  /** A Deno KV file to keep sessions and records in; only with {@linkcode Brain.open}, instead of `journal`. */
  path?: string;
  /** Bytes one activation may emit across results and events; {@linkcode BRAIN_MAX_EMITTED_BYTES} by default. */
  maxEmittedBytes?: number;
  /** Model calls one activation may make; {@linkcode BRAIN_MAX_MODEL_CALLS} by default. */
  maxModelCalls?: number;
  /** What this Brain may grant to Brain-hosted Environments; nothing by default. */
  allow?: AllowList;
}

/** Options for creating a session. */
export interface CreateSessionOptions {
  /** Placed Tools; names must be unique. */
  tools?: readonly PlacedTool[];
  /** The session id; a random UUID by default. */
  id?: string;
  /** The session's fixed provider, model and credentials; without it the session has no Agentloop and no `ctx.model`. */
  model?: SessionModel;
  /** Options of the session's Agentloop. */
  agentloop?: AgentloopOptions;
  /** The registered host the session's application Tools belong to; only the token's hash is stored. */
  host?: HostCredentials;
}

/** Options for opening an existing session. */
export interface GetSessionOptions {
  /** The session's model again (credentials are never stored); its provider and model names must match. */
  model?: SessionModel;
  /** Options of the session's Agentloop. */
  agentloop?: AgentloopOptions;
  /** Exactly the Tools the session was created with, to restore their handlers. */
  tools?: readonly PlacedTool[];
  /** The session's registered host credentials; required with `tools` when the session has a host. */
  host?: HostCredentials;
}

/** The `brain.sessions` API. */
export interface Sessions {
  /** Creates a session with its Tools; non-host implementations are admitted first. */
  create(options?: CreateSessionOptions): Promise<Session>;
  /**
   * Opens an existing session; alone it gives a handle for reading. Supplying
   * the original Tools (and the registered host's credentials) restores their
   * handlers for future calls. Calls left open by a stopped Brain end `unknown`
   * first; none is dispatched again.
   */
  get(id: string, options?: GetSessionOptions): Promise<Session>;
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
  #maxModelCalls: number;
  #allow: AllowList | undefined;
  #live = new Set<Session>();
  #closed = false;

  /** Creates an embedded Brain over `options.journal` (in memory by default); use {@linkcode Brain.open} for a `path`. */
  constructor(options: BrainOptions = {}) {
    if (options.path !== undefined) {
      throw new BrainError(
        "invalid_argument",
        "a Brain over a path opens asynchronously: use await Brain.open({ path })",
      );
    }
    this.#journal = options.journal ?? new MemoryJournal();
    this.#maxEmittedBytes = options.maxEmittedBytes ?? BRAIN_MAX_EMITTED_BYTES;
    this.#maxModelCalls = options.maxModelCalls ?? BRAIN_MAX_MODEL_CALLS;
    this.#allow = options.allow;
    this.sessions = Object.freeze({
      create: (create?: CreateSessionOptions) => this.#create(create),
      get: (id: string, get?: GetSessionOptions) => this.#get(id, get),
      delete: (id: string) => this.#delete(id),
      list: () => this.#journal.listSessions(),
    });
  }

  /**
   * Opens a Brain, over the Deno KV file at `path` when given. Every call its
   * journal still has open was in flight in a Brain that stopped: each ends
   * with a committed `unknown` outcome before this resolves, and is never
   * dispatched again. One Brain at a time owns a journal.
   *
   * @example
   * ```ts
   * import { Brain } from "@aexhq/brain";
   * const brain = await Brain.open({ path: ":memory:" });
   * try {
   *   const session = await brain.sessions.create({ host: { id: "app", token: crypto.randomUUID() } });
   *   console.log((await brain.sessions.get(session.id)).id === session.id); // true
   * } finally {
   *   await brain.close();
   * }
   * ```
   */
  static async open(options: BrainOptions = {}): Promise<Brain> {
    const { path, ...rest } = options;
    if (path !== undefined && rest.journal) {
      throw new BrainError("invalid_argument", "give a Brain either a journal or a path, not both");
    }
    const journal = path === undefined ? rest.journal : await KvJournal.open(path);
    const brain = new Brain({ ...rest, journal });
    try {
      for (const meta of await brain.#journal.listSessions()) await endOrphanedCalls(brain.#journal, meta.id);
    } catch (error) {
      await brain.close();
      throw error;
    }
    return brain;
  }

  /** Ends every open session handle, then closes the journal. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#live].map((session) => session.end()));
    await this.#journal.close();
  }

  async #create(
    { tools = [], id = crypto.randomUUID(), host, model, agentloop }: CreateSessionOptions = {},
  ): Promise<Session> {
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
    const registered = host === undefined ? undefined : await registerHost(host);
    const workspaces = await this.#admit(id, tools);
    const meta: SessionMeta = { id, createdAt: Date.now(), tools: tools.map((placed) => placed.advertised) };
    if (model) meta.model = modelNames(model);
    if (registered) meta.host = registered;
    await this.#journal.createSession(meta);
    return this.#open(meta, tools, workspaces, model, agentloop);
  }

  async #get(id: string, { tools = [], host, model, agentloop }: GetSessionOptions = {}): Promise<Session> {
    this.#assertOpen();
    const meta = await this.#journal.getSession(id);
    if (!meta) throw new BrainError("session_not_found", `no session ${id}`);
    if (tools.length > 0 || host !== undefined) await verifyHost(id, meta.host, host);
    if (tools.length > 0) checkReattachment(id, meta.tools, tools);
    if (model) checkModel(meta, model);
    // A live handle owns its session's open calls; without one, open calls are orphans of a stopped Brain.
    if (![...this.#live].some((session) => session.id === id)) await endOrphanedCalls(this.#journal, id);
    return this.#open(meta, tools, await this.#admit(id, tools), model, agentloop);
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

  #open(
    meta: SessionMeta,
    tools: readonly PlacedTool[],
    workspaces: Map<string, string>,
    model: SessionModel | undefined,
    agentloop: AgentloopOptions | undefined,
  ): Session {
    const session = new Session({
      journal: this.#journal,
      meta,
      tools,
      workspaces,
      allow: this.#allow,
      maxEmittedBytes: this.#maxEmittedBytes,
      maxModelCalls: this.#maxModelCalls,
      models: model && new ModelCaller({ journal: this.#journal, sessionId: meta.id, model }),
      conversation: (parts) => new Agentloop(parts, agentloop),
      onEnd: (ended) => this.#live.delete(ended),
    });
    this.#live.add(session);
    return session;
  }

  #assertOpen(): void {
    if (this.#closed) throw new BrainError("session_closed", "this Brain is closed");
  }
}

function modelNames(model: SessionModel): { provider: string; model: string } {
  if (typeof model.model !== "string" || model.model === "" || typeof model.provider?.complete !== "function") {
    throw new BrainError("invalid_argument", "a session model needs a provider and a model name");
  }
  return { provider: model.provider.name, model: model.model };
}

function checkModel(meta: SessionMeta, model: SessionModel): void {
  const given = modelNames(model);
  if (meta.model?.provider !== given.provider || meta.model?.model !== given.model) {
    throw new BrainError(
      "reattach_mismatch",
      `session ${meta.id} uses ${
        meta.model ? `${meta.model.provider}/${meta.model.model}` : "no model"
      }, not ${given.provider}/${given.model}`,
      { details: { saved: meta.model ?? null, given } },
    );
  }
}
