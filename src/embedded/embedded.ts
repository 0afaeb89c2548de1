import { MAX_LEASE_MS } from "../journal/lease.ts";
import type { AllowList } from "../contract/grant.ts";
import { admitEnvironment, admitImplementation, bindEnvironments } from "../session/bindings.ts";
import { type CreatedEnvironment, restoreCreated } from "../session/created_env.ts";
import { type HostRegistration, registerHost, verifyHost } from "./host_token.ts";
import { sameText } from "../util/same_text.ts";
import { checkName, checkSessionId } from "../util/names.ts";
import { removeSessionWorkspaces } from "../session/workspaces.ts";
import { noSession } from "../session/no_session.ts";
import type { Journal } from "../journal/journal.ts";
import type { SessionCreateOptions } from "../journal/host_sessions.ts";
import { KvJournal } from "../journal/kv.ts";
import { MemoryJournal } from "../journal/memory.ts";
import { checkedJournal } from "../journal/checked_journal.ts";
import { placeTools, releaseTools } from "./placed_environment.ts";
import { JOURNAL_METHODS } from "../journal/built_in.ts";
import { Ownership } from "../journal/ownership.ts";
import { isPostgresUrl } from "../journal/postgres_url.ts";
import type { SessionMeta } from "../journal/records.ts";
import { BrainError } from "../outcome/errors.ts";
import { BRAIN_MAX_EMITTED_BYTES, BRAIN_MAX_MODEL_CALLS } from "../session/activation.ts";
import { BRAIN_MAX_INPUT_BYTES } from "../contract/budgets.ts";
import { Agentloop, type AgentloopOptions } from "../agentloop/agentloop.ts";
import type { ModelProvider, ProviderCall, SessionModel } from "../model/types.ts";
import { ModelCaller } from "../session/model_call.ts";
import { Session } from "../session/session.ts";
import type { ComponentSettings, Environment, EnvironmentTools, PlacedTool } from "../contract/placement.ts";
import { Resources } from "./resources.ts";
import { allKeys, isList, readList, readOptions, readRecord } from "../outcome/known_keys.ts";
import { checkAllowList } from "../env/allow_list.ts";
import type { BrainBackend, CreateSessionOptions, GetSessionOptions } from "./backend.ts";
import { checkReattachment } from "./reattach.ts";
import { advertisedTools } from "./advertised_tools.ts";
import { endOrphanedCalls } from "./recover.ts";
import { checkPlacedTools } from "../tool/placed_tools.ts";
import { settledWithin } from "../util/settled_within.ts";
import { paused } from "../util/paused.ts";
import { shownValue } from "../util/shown_value.ts";

/** Options for an embedded Brain. */
export interface BrainOptions {
  /**
   * Where sessions and records live; an in-memory journal by default. A
   * journal other than Brain's own stores (`MemoryJournal`, `KvJournal`,
   * `PostgresJournal`) is checked: an answer no store gives (a record of no
   * known kind, sequences out of place, a lease of another session) fails
   * `journal_corrupt`; anything else it throws or rejects with, and any answer
   * that has not come within `leaseMs`, fails `storage_unavailable`, as a
   * failed store does. (A Brain that waited longer could hold no lease: it
   * renews them at a third of that time. `PostgresJournal` gives up on a
   * silent database after the same 10 s by default.)
   */
  journal?: Journal;
  /** A Deno KV file to keep sessions and records in; only with `Brain.open`, instead of `journal`. */
  path?: string;
  /**
   * A PostgreSQL database to keep sessions and records in (`postgres://user@host:port/db`),
   * shared by every Brain given the same URL; only with `Brain.open`, instead of `journal` or `path`.
   */
  url?: string;
  /** Bytes one activation may emit across results and events; {@linkcode BRAIN_MAX_EMITTED_BYTES} by default. */
  maxEmittedBytes?: number;
  /** Bytes of one Tool call's input JSON; {@linkcode BRAIN_MAX_INPUT_BYTES} by default (over it: `payload_too_large`). */
  maxInputBytes?: number;
  /** Model calls one activation may make; {@linkcode BRAIN_MAX_MODEL_CALLS} by default. */
  maxModelCalls?: number;
  /** What this Brain may grant to Brain-hosted Environments; nothing by default. */
  allow?: AllowList;
  /**
   * Models sessions pick by name (`sessions.create({ model: "default" })`): a
   * Brain server's clients name one, and its provider and credentials never
   * leave the server.
   */
  models?: Readonly<Record<string, SessionModel>>;
  /**
   * How long this Brain's hold on a session it writes to lasts without renewal
   * (it renews every third of it): after its process dies, another Brain over
   * the same journal takes the session over once this passed. 10 s by default.
   * Also how long an application's `journal` may take to answer.
   */
  leaseMs?: number;
  /** Limits and the cache folder of the child processes that run Components. */
  components?: ComponentSettings;
}

/** Errors of a journal's store worth trying again after. */
const STORE_FAILURES = new Set<string>(["storage_unavailable", "storage_full", "journal_conflict"]);
/** Tries, a second apart, to end the calls a failing store left open. */
const SWEEP_ATTEMPTS = 60;
const SWEEP_RETRY_MS = 1_000;

/** How long closing waits for the journal to commit the ends of open calls and release leases. */
const CLOSE_WAIT_MS = 2_000;
/** How long closing waits, past that, for the leases of sessions whose ends the store still holds to be given up. */
const RELEASE_START_MS = 50;

/** The default {@linkcode BrainOptions.leaseMs}. */
export const DEFAULT_LEASE_MS = 10_000;

/** The keys an embedded Brain's options may have. */
export const BRAIN_OPTIONS: readonly string[] = allKeys<BrainOptions>({
  journal: true,
  path: true,
  url: true,
  maxEmittedBytes: true,
  maxInputBytes: true,
  maxModelCalls: true,
  allow: true,
  models: true,
  leaseMs: true,
  components: true,
});
const COMPONENT_SETTINGS = allKeys<ComponentSettings>({
  cacheDir: true,
  memoryMb: true,
  maxSandboxes: true,
  maxQueuedCalls: true,
  warm: true,
});

/**
 * Sessions, their journal and the execution of their calls, in this process.
 * A Brain server passes `authenticated`: the registration of the connected host
 * whose token it has already checked against the stored hash.
 */
export class EmbeddedBackend implements BrainBackend {
  /** The journal every session of this backend lives in. */
  readonly journal: Journal;
  #maxEmittedBytes: number;
  #maxInputBytes: number;
  #maxModelCalls: number;
  #allow: AllowList | undefined;
  #models: Readonly<Record<string, SessionModel>>;
  /** The handles open here, by session id: a session has few, a Brain may hold many sessions. */
  #live = new Map<string, Set<Session>>();
  /** The ownership each writing handle writes under; reading handles have none. */
  #writers = new WeakMap<Session, Ownership>();
  /** The sessions this Brain owns, while it has a writing handle of them. */
  #owned = new Map<string, Promise<Ownership>>();
  /** This Brain's owner id in session leases. */
  #node = crypto.randomUUID();
  #leaseMs: number;
  #resources: Resources;
  #closed = false;
  /** The first close(), which every later call settles with. */
  #closedOnce: Promise<void> | undefined;
  /** Creations and openings of sessions under way. */
  #openings = new Set<Promise<Session>>();
  /** Aborted when the Brain closes, ending any wait to retry the store. */
  #closing = new AbortController();

  constructor(given: BrainOptions = {}) {
    const options = readOptions("Brain options", given, BRAIN_OPTIONS);
    if (options.path !== undefined || options.url !== undefined) {
      throw new BrainError(
        "invalid_argument",
        "a Brain over a path opens asynchronously: use await Brain.open({ path }); a remote Brain is " +
          "new Brain({ url, token, host })",
      );
    }
    this.#maxEmittedBytes = positiveLimit("maxEmittedBytes", options.maxEmittedBytes ?? BRAIN_MAX_EMITTED_BYTES);
    this.#maxInputBytes = positiveLimit("maxInputBytes", options.maxInputBytes ?? BRAIN_MAX_INPUT_BYTES);
    this.#maxModelCalls = positiveLimit("maxModelCalls", options.maxModelCalls ?? BRAIN_MAX_MODEL_CALLS);
    this.#allow = checkAllowList(options.allow);
    const models = options.models === undefined ? {} : readRecord("models", options.models);
    this.#models = Object.fromEntries(
      Object.entries(models).map(([name, model]) => [name, configuredModel(name, model)]),
    );
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    if (!Number.isFinite(this.#leaseMs) || this.#leaseMs <= 0 || this.#leaseMs > MAX_LEASE_MS) {
      throw new BrainError(
        "invalid_argument",
        `leaseMs must be a positive number of milliseconds up to ${MAX_LEASE_MS}, got ${shownValue(options.leaseMs)}`,
      );
    }
    this.journal = options.journal === undefined
      ? new MemoryJournal()
      : checkedJournal(checkJournal(options.journal), this.#leaseMs);
    this.#resources = new Resources(
      options.components === undefined ? undefined : readOptions("components", options.components, COMPONENT_SETTINGS),
    );
  }

  /**
   * Opens a backend, over the Deno KV file at `path` when given. Opening owns
   * nothing: other Brains over the same journal keep their sessions until this
   * one opens a session to write to it.
   */
  static async open(options: BrainOptions = {}): Promise<EmbeddedBackend> {
    const { path, url, ...given } = options;
    if ([path, url, given.journal].filter((value) => value !== undefined).length > 1) {
      throw new BrainError("invalid_argument", "give a Brain one of a journal, a path or a url");
    }
    // The allow-list read now, not once the journal is open: a list the caller changes meanwhile grants nothing.
    const rest = { ...given, allow: checkAllowList(given.allow) };
    const journal = path !== undefined
      ? await KvJournal.open(path)
      : url !== undefined
      ? await openPostgres(url)
      : rest.journal;
    try {
      return new EmbeddedBackend({ ...rest, journal });
    } catch (error) {
      await journal?.close();
      throw error;
    }
  }

  /** This Brain's node id: the owner of every session lease it holds. */
  get node(): string {
    return this.#node;
  }

  /** How long this Brain's session leases last without renewal. */
  get leaseMs(): number {
    return this.#leaseMs;
  }

  create(
    options: CreateSessionOptions = {},
    authenticated?: HostRegistration,
    counted?: SessionCreateOptions,
  ): Promise<Session> {
    return this.#opening(() => this.#create(options, authenticated, counted));
  }

  get(id: string, options: GetSessionOptions = {}, authenticated?: HostRegistration): Promise<Session> {
    return this.#opening(() => this.#get(id, options, authenticated));
  }

  /**
   * Runs a creation or an opening of a session so that `close` waits for it
   * (briefly) before ending the sessions and closing the journal: one that
   * meets the close fails `brain_closed`, having given back what it took.
   */
  async #opening(open: () => Promise<Session>): Promise<Session> {
    const opening = open();
    this.#openings.add(opening);
    try {
      return await opening;
    } catch (error) {
      if (!(this.#closed && error instanceof BrainError && error.code === "journal_closed")) throw error;
      throw new BrainError("brain_closed", "this Brain is closed", { cause: error });
    } finally {
      this.#openings.delete(opening);
    }
  }

  async #create(
    {
      tools: given = [],
      environments = [],
      id = crypto.randomUUID(),
      host,
      model: chosen,
      agentloop,
    }: CreateSessionOptions = {},
    authenticated?: HostRegistration,
    counted?: SessionCreateOptions,
  ): Promise<Session> {
    this.#assertOpen();
    const model = this.#model(chosen);
    // A Brain server passes its hosts' session ids as host-scoped journal keys; an application names its own.
    if (authenticated) checkSessionId(id);
    else checkName("a session id", id);
    const listed = checkPlacedTools(given);
    const bindings = readEnvironments(environments);
    if (await this.journal.getSession(id)) throw new BrainError("session_exists", `session ${id} already exists`);
    // A new session starts with empty workspaces, whatever an earlier session of this id left.
    await removeSessionWorkspaces(this.#allow?.workspaceRoot, id);
    const placed = await this.#place(id, bindings);
    const ended = new AbortController();
    try {
      const tools = [...listed, ...placed.flatMap((entry) => entry.tools)];
      checkPlacedTools(tools);
      const registered = host === undefined ? authenticated : await registerHost(host);
      const workspaces = await this.#admit(id, tools, ended.signal);
      const meta: SessionMeta = { id, createdAt: Date.now(), tools: await advertisedTools(tools) };
      if (registered) meta.host = registered;
      if (model) meta.model = modelNames(model);
      await this.journal.createSession(meta, counted);
      const ownership = await this.#own(id, 0);
      return this.#open(meta, tools, workspaces, placed, ended, model, agentloop, undefined, ownership);
    } catch (error) {
      ended.abort();
      await releaseTools(placed);
      // A refused creation leaves no folder; a concurrent creation of the same id keeps its own.
      if (!(error instanceof BrainError && error.code === "session_exists")) {
        await removeSessionWorkspaces(this.#allow?.workspaceRoot, id);
      }
      throw error;
    }
  }

  async #get(
    id: string,
    { tools: given = [], environments = [], host, model: chosen, agentloop, waitMs = 0 }: GetSessionOptions = {},
    authenticated?: HostRegistration,
  ): Promise<Session> {
    this.#assertOpen();
    checkSessionId(id);
    const listed = checkPlacedTools(given);
    const bindings = readEnvironments(environments);
    const model = this.#model(chosen);
    const meta = await this.journal.getSession(id);
    if (!meta) throw noSession(id);
    if (authenticated) checkOwner(id, meta.host, authenticated);
    else if (listed.length > 0 || host !== undefined) await verifyHost(id, meta.host, host);
    if (model) checkModel(meta, model);
    const placed = await this.#place(id, bindings);
    const ended = new AbortController();
    try {
      const tools = [...listed, ...placed.flatMap((entry) => entry.tools)];
      if (tools.length > 0) checkReattachment(id, meta.tools, await advertisedTools(tools));
      const writes = tools.length > 0 || model !== undefined;
      const ownership = writes ? await this.#own(id, waitMs) : await this.#sweepIfUnowned(id, waitMs);
      const workspaces = await this.#admit(id, tools, ended.signal);
      const created = await restoreCreated(id, await this.journal.read(id), this.#allow);
      return this.#open(meta, tools, workspaces, placed, ended, model, agentloop, created, ownership);
    } catch (error) {
      ended.abort();
      await releaseTools(placed);
      await this.#releaseIfIdle(id);
      throw error;
    }
  }

  /**
   * This Brain's ownership of a session, taken now if it holds none: calls the
   * session still has open then belong to an owner that stopped or lost it, and
   * end `unknown`. Fails `session_owned` while another Brain holds it (after
   * waiting up to `waitMs`).
   */
  #own(id: string, waitMs: number): Promise<Ownership> {
    let owned = this.#owned.get(id);
    if (!owned) {
      owned = (async () => {
        const ownership = await Ownership.take(this.journal, id, {
          owner: this.#node,
          ttlMs: this.#leaseMs,
          waitMs,
          signal: this.#closing.signal,
        });
        ownership.lost.addEventListener("abort", () => void this.#lose(id, ownership), { once: true });
        try {
          await endOrphanedCalls(ownership.journal, id);
          this.#assertOpen();
        } catch (error) {
          await ownership.release();
          throw error;
        }
        return ownership;
      })();
      this.#owned.set(id, owned);
      owned.catch(() => this.#owned.get(id) === owned && this.#owned.delete(id));
    }
    return owned;
  }

  /**
   * Ends the calls a stopped owner left open in session `id`, taking the
   * session for that moment, unless another live Brain owns it or this one
   * writes to it already. A Brain server does it for each session whose owner's
   * lease lapsed, so no call waits for a host to come back to be ended.
   */
  async recover(id: string): Promise<void> {
    this.#assertOpen();
    await this.#sweepIfUnowned(id, 0);
  }

  /**
   * For a reading handle: ends the calls of an owner that stopped, if no live
   * Brain owns the session (after waiting up to `waitMs` for its lease to end).
   */
  async #sweepIfUnowned(id: string, waitMs: number): Promise<Ownership | undefined> {
    if (this.#owned.has(id)) return await this.#owned.get(id);
    try {
      await this.#own(id, waitMs);
    } catch (error) {
      if (error instanceof BrainError && error.code === "session_owned") return undefined;
      throw error;
    }
    await this.#releaseIfIdle(id);
    return undefined;
  }

  /**
   * After a writing handle ended, calls it could not end (its store failed) are
   * still open: once no handle here writes to the session, this Brain takes it
   * again and ends them `unknown`, retrying while the store is failing.
   */
  async #endLeftOpen(id: string): Promise<void> {
    for (let attempt = 0; attempt < SWEEP_ATTEMPTS && !this.#closed; attempt++) {
      if (this.#writes(id)) return;
      try {
        if ((await this.journal.openCalls(id)).length === 0) return;
        await this.#sweepIfUnowned(id, 0);
        return;
      } catch (error) {
        if (!(error instanceof BrainError && STORE_FAILURES.has(error.code))) return;
        await paused(SWEEP_RETRY_MS, this.#closing.signal);
      }
    }
  }

  /**
   * Another Brain took the session over, or it was deleted (its lease went with it): its handles here
   * end for that reason, and their calls settle `fenced`.
   */
  async #lose(id: string, ownership: Ownership): Promise<void> {
    this.#owned.delete(id);
    const lost = ownership.lost.reason as BrainError;
    // A commit that found the session gone said so (the cause); a renewal refused `fenced` may also mean it was deleted.
    const deleted = (lost.cause as BrainError | undefined)?.code === "session_not_found" ||
      await this.journal.getSession(id).catch(() => "unknown") === undefined;
    const reason = deleted ? new BrainError("session_not_found", `session ${id} was deleted`, { cause: lost }) : lost;
    for (const session of this.#live.get(id) ?? []) {
      if (this.#writers.get(session) === ownership) void session.lose(reason);
    }
  }

  /**
   * Gives a session's lease up once no handle of this Brain writes to it,
   * ending first the calls still open: no handle here runs them (their ends
   * failed to commit, or an intent landed though its commit failed), and a
   * Brain that closes ends them itself. True when some may still be open.
   */
  async #releaseIfIdle(id: string): Promise<boolean> {
    const owned = this.#owned.get(id);
    if (!owned || this.#writes(id)) return true;
    this.#owned.delete(id);
    const ownership = await owned.catch(() => undefined);
    if (!ownership) return true;
    const ended = await endOrphanedCalls(ownership.journal, id).then(() => true, () => false);
    await ownership.release();
    return !ended;
  }

  async delete(id: string): Promise<void> {
    this.#assertOpen();
    checkSessionId(id);
    await Promise.allSettled([...this.#live.get(id) ?? []].map((session) => session.end()));
    await this.journal.deleteSession(id);
    await removeSessionWorkspaces(this.#allow?.workspaceRoot, id);
  }

  async list(): Promise<SessionMeta[]> {
    this.#assertOpen();
    return await this.journal.listSessions();
  }

  close(): Promise<void> {
    return this.#closedOnce ??= this.#close();
  }

  async #close(): Promise<void> {
    this.#closed = true;
    this.#closing.abort(new BrainError("brain_closed", "this Brain is closed"));
    // A store that stopped answering holds these commits: the journal's close then ends them.
    const ended = Promise.allSettled(
      [...this.#live.values()].flatMap((handles) => [...handles].map((session) => session.end())),
    );
    const ending = (async () => {
      // Creations and openings under way fail brain_closed, giving back what they took, before the leases go.
      await Promise.allSettled([ended, ...this.#openings]);
      await Promise.allSettled([...this.#owned.values()].map(async (owned) => (await owned).release()));
    })();
    if (!await settledWithin(ending, CLOSE_WAIT_MS)) {
      // A session whose end the store still holds keeps no lease, nor holds the others': a next owner takes each at
      // once and ends what is open, and a late commit of this Brain's under a lease given up meets its fence.
      // A moment to start them: the journal's close waits for them with what else still runs on it.
      const released = [...this.#owned.values()].map(async (owned) => (await owned).release());
      await settledWithin(Promise.allSettled(released), RELEASE_START_MS);
    }
    this.#owned.clear();
    await this.#resources.close();
    await this.journal.close();
  }

  /** Admits each Environment's grant, then lets it place its Tools; on a failure releases those already placed. */
  async #place(id: string, environments: readonly Environment[]): Promise<EnvironmentTools[]> {
    const placed: EnvironmentTools[] = [];
    try {
      for (const [index, env] of environments.entries()) {
        if (!placesTools(env)) throw notPlacing(index, env);
        const workspace = await admitEnvironment(id, env, this.#allow);
        placed.push(await placeTools(env, index, { sessionId: id, workspace, allow: this.#allow }));
      }
    } catch (error) {
      await releaseTools(placed);
      throw error;
    }
    return placed;
  }

  async #admit(id: string, tools: readonly PlacedTool[], ended: AbortSignal): Promise<Map<string, string>> {
    const workspaces = await bindEnvironments(id, tools, this.#allow);
    for (const placed of tools) {
      const { env, options } = placed;
      await admitImplementation(placed, {
        env,
        options,
        workspace: env && workspaces.get(env.name),
        allow: this.#allow,
        resources: this.#resources,
        ended,
      });
    }
    return workspaces;
  }

  #open(
    meta: SessionMeta,
    tools: readonly PlacedTool[],
    workspaces: Map<string, string>,
    placed: EnvironmentTools[],
    ended: AbortController,
    model?: SessionModel,
    agentloop?: AgentloopOptions,
    created?: CreatedEnvironment[],
    ownership?: Ownership,
  ): Session {
    this.#assertOpen();
    const journal = ownership?.journal ?? this.journal;
    const session = new Session({
      journal,
      meta,
      tools,
      workspaces,
      allow: this.#allow,
      created,
      maxEmittedBytes: this.#maxEmittedBytes,
      maxInputBytes: this.#maxInputBytes,
      maxModelCalls: this.#maxModelCalls,
      models: model && new ModelCaller({ journal, sessionId: meta.id, model }),
      conversation: (parts) => new Agentloop(parts, agentloop),
      resources: this.#resources,
      onEnd: async (session) => {
        const handles = this.#live.get(session.id);
        handles?.delete(session);
        if (handles?.size === 0) this.#live.delete(session.id);
        ended.abort();
        await releaseTools(placed);
        if (await this.#releaseIfIdle(session.id)) this.#endLeftOpen(session.id);
      },
    });
    const handles = this.#live.get(meta.id) ?? this.#live.set(meta.id, new Set()).get(meta.id)!;
    handles.add(session);
    if (ownership) this.#writers.set(session, ownership);
    return session;
  }

  /** True while a handle open here writes to session `id`. */
  #writes(id: string): boolean {
    for (const session of this.#live.get(id) ?? []) if (this.#writers.has(session)) return true;
    return false;
  }

  /** The session model `chosen` names, or `chosen` itself; throws `model_unavailable` for a name not configured. */
  /** The model a session uses, read once (see {@linkcode fixedModel}). */
  #model(chosen: SessionModel | string | undefined): SessionModel | undefined {
    if (typeof chosen !== "string") return chosen === undefined ? undefined : fixedModel(chosen);
    if (Object.hasOwn(this.#models, chosen)) return this.#models[chosen];
    const names = Object.keys(this.#models);
    throw new BrainError(
      "model_unavailable",
      `this Brain has no model named ${JSON.stringify(chosen)}; ${
        names.length ? `it has ${names.map((name) => JSON.stringify(name)).join(", ")}` : "it has none"
      }`,
    );
  }

  #assertOpen(): void {
    if (this.#closed) throw new BrainError("brain_closed", "this Brain is closed");
  }
}

/**
 * Throws `session_not_found`, exactly as for a session that does not exist, unless
 * the session is placed in the authenticated host: another host's session ids stay hidden.
 */
export function checkOwner(
  sessionId: string,
  registered: HostRegistration | undefined,
  host: HostRegistration,
): void {
  if (!ownedBy(registered, host)) throw noSession(sessionId);
}

/** Why `environments[index]` cannot be placed on its own: it is a Promise, or an Environment a Tool binds. */
function notPlacing(index: number, env: unknown): BrainError {
  let name: unknown;
  let then: unknown;
  try {
    ({ name, then } = env as { name?: unknown; then?: unknown });
  } catch {
    // A Proxy or getter that throws: described by its position alone.
  }
  if (typeof then === "function") {
    return new BrainError("invalid_argument", `environments[${index}] is a Promise: await it first`);
  }
  const shown = typeof name === "string" ? ` (${name})` : "";
  return new BrainError(
    "invalid_argument",
    `environments[${index}]${shown} places no Tools of its own: only an Environment such as mcpEnv(...) goes in ` +
      "environments; bind the others to a Tool's placement, as in tools: [lookup({ env })]",
  );
}

/** True when a session's registration is exactly the authenticated host's. */
export function ownedBy(registered: HostRegistration | undefined, host: HostRegistration): boolean {
  return registered?.id === host.id && sameText(registered.tokenHash, host.tokenHash);
}

/** Returns `journal` when it has a journal's methods; otherwise throws `invalid_argument`. */
function checkJournal(journal: unknown): Journal {
  try {
    const methods = journal as Record<string, unknown>;
    if (
      typeof journal === "object" && journal !== null &&
      JOURNAL_METHODS.every((name) => typeof methods[name] === "function")
    ) {
      return journal as Journal;
    }
  } catch {
    // A getter or Proxy that throws is no journal either.
  }
  throw new BrainError("invalid_argument", "journal must be a Journal, such as new MemoryJournal()");
}

/** True for an Environment with a `place` function; false also for a Proxy or getter that throws. */
function placesTools(env: Environment): env is Environment & Required<Pick<Environment, "place">> {
  try {
    return typeof env?.place === "function";
  } catch {
    return false;
  }
}

function positiveLimit(name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw new BrainError("invalid_argument", `${name} must be a positive integer, got ${shownValue(value)}`);
  }
  return value;
}

const SESSION_MODEL_KEYS = allKeys<SessionModel>({ provider: true, model: true, credentials: true });

/**
 * `model` read once into a frozen copy whose provider's name is fixed: an
 * application's provider or model whose getters answer differently later (or
 * throw) cannot change what a session's calls record. `invalid_argument`
 * unless it has a provider with a `complete` function and a model name.
 */
function fixedModel(model: SessionModel): SessionModel {
  const { provider, model: name, credentials } = readOptions("session model options", model, SESSION_MODEL_KEYS);
  try {
    if (typeof name === "string" && name !== "" && typeof provider?.complete === "function") {
      const fixed: ModelProvider = Object.freeze({
        name: String(provider.name),
        complete: (call: ProviderCall) => provider.complete(call),
      });
      return Object.freeze({ provider: fixed, model: name, ...(credentials === undefined ? {} : { credentials }) });
    }
  } catch {
    // A getter or Proxy that throws is no model either.
  }
  throw new BrainError("invalid_argument", "a session model needs a provider and a model name");
}

/** The names a session keeps of its model. */
function modelNames({ provider, model }: SessionModel): { provider: string; model: string } {
  return { provider: provider.name, model };
}

function configuredModel(name: string, model: SessionModel): SessionModel {
  if (name === "") throw new BrainError("invalid_argument", "a configured model needs a non-empty name");
  return fixedModel(model);
}

/** Throws `reattach_mismatch` unless `model` names the session's saved provider and model. */
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

/** A PostgreSQL journal; its module (and the driver) loads only for a Brain that uses one. */
async function openPostgres(url: string): Promise<Journal> {
  if (!isPostgresUrl(url)) {
    throw new BrainError("invalid_argument", `a Brain's journal url is postgres://..., got ${JSON.stringify(url)}`);
  }
  const { PostgresJournal } = await import("../journal/postgres.ts");
  return await PostgresJournal.open(url);
}

/** A session's `environments` as read now, a list of its own; `invalid_argument` for anything but a list. */
function readEnvironments(environments: unknown): readonly Environment[] {
  if (!isList(environments)) {
    throw new BrainError("invalid_argument", "environments must be an array of Environments, such as [mcpEnv(...)]");
  }
  return readList("environments", environments) as Environment[];
}
