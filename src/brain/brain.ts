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
import type { AllowList } from "../env/allow_list.ts";
import { bindEnvironments } from "../env/bindings.ts";

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** Options for an embedded Brain. */
export interface BrainOptions {
  /** Where sessions and records live; an in-memory journal by default. */
  journal?: Journal;
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
}

/** Options for opening an existing session. */
export interface GetSessionOptions {
  /** The original Tools, to restore their handlers. */
  tools?: readonly PlacedTool[];
  /** The session's model again (credentials are never stored); its provider and model names must match. */
  model?: SessionModel;
  /** Options of the session's Agentloop. */
  agentloop?: AgentloopOptions;
}

/** The `brain.sessions` API. */
export interface Sessions {
  /** Creates a session with its Tools; non-host implementations are admitted first. */
  create(options?: CreateSessionOptions): Promise<Session>;
  /** Opens an existing session; supplying the original Tools restores their handlers. */
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

  /** Creates an embedded Brain over `options.journal` (in memory by default). */
  constructor(options: BrainOptions = {}) {
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

  async #create(
    { tools = [], id = crypto.randomUUID(), model, agentloop }: CreateSessionOptions = {},
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
    const workspaces = await this.#admit(id, tools);
    const meta: SessionMeta = { id, createdAt: Date.now(), tools: tools.map((placed) => placed.advertised) };
    if (model) meta.model = modelNames(model);
    await this.#journal.createSession(meta);
    return this.#open(meta, tools, workspaces, model, agentloop);
  }

  async #get(id: string, { tools = [], model, agentloop }: GetSessionOptions = {}): Promise<Session> {
    this.#assertOpen();
    const meta = await this.#journal.getSession(id);
    if (!meta) throw new BrainError("session_not_found", `no session ${id}`);
    if (tools.length > 0) checkReattachment(id, meta.tools, tools);
    if (model) checkModel(meta, model);
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
      await implementation?.admit({ env, options, workspace: env && workspaces.get(env.name) });
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
