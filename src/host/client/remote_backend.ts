import { deepFreeze } from "../../util/freeze.ts";
import { checkTimerMs } from "../../util/timer.ts";
import { checkName } from "../../util/names.ts";
import { checkAllowList } from "../../env/allow_list.ts";
import { checkReadOptions } from "../../journal/read_options.ts";
import type { AgentloopOptions } from "../../agentloop/agentloop.ts";
import { type AssistantMessage, awaitReply, checkSendArguments, type SendOptions } from "../../session/conversation.ts";
import type { BrainBackend, CreateSessionOptions, GetSessionOptions } from "../../embedded/backend.ts";
import type { BrainSession } from "../../session/handle.ts";
import { checkPlacedTools } from "../../tool/placed_tools.ts";
import type { ReadOptions } from "../../journal/journal.ts";
import type { JournalRecord, SessionMeta } from "../../journal/records.ts";
import { BrainError } from "../../outcome/errors.ts";
import type { JsonValue } from "../../outcome/json.ts";
import { type Activation, checkActivationOf, sessionActivation } from "../../session/activation.ts";
import type { CallEnd } from "../../session/call_state.ts";
import { type CallOptions, checkCallArguments, resolveTarget } from "../../session/call_arguments.ts";
import { handleEnded } from "../../session/handle_ended.ts";
import type { ToolCall } from "../../session/handle.ts";
import type { PlacedTool } from "../../contract/placement.ts";
import { promised } from "../../util/promised.ts";
import { checkCancelReason } from "../../contract/budgets.ts";
import {
  type Executor,
  type HandleConversation,
  HostConnection,
  type HostConnectionEvent,
  isServerUrl,
} from "./connection.ts";
import { checkToken } from "../../util/tokens.ts";
import { readList } from "../../outcome/known_keys.ts";
import { dispatchCall } from "../../session/dispatch.ts";
import { ModelService } from "../../session/model_service.ts";
import { admitImplementation, bindEnvironments, uniqueBindings } from "../../session/bindings.ts";
import { restoreCreated } from "../../session/created_env.ts";
import { SessionEnvironments } from "../../session/environments.ts";
import type { AllowList } from "../../contract/grant.ts";
import type { Budgets, RequestFrame, WireUpload } from "../protocol.ts";
import { type ComponentUpload, componentUpload, isComponent, wireUpload } from "./component_upload.ts";
import { traceparentOf } from "../../telemetry/trace_context.ts";
import { settledWithin } from "../../util/settled_within.ts";
import { shownValue } from "../../util/shown_value.ts";

/** How long `close()` waits for the server to end the client's session handles. */
const CLOSE_WAIT_MS = 2_000;

/** Options for a client of a Brain server. */
export interface RemoteBrainOptions {
  /**
   * The server's base URL, such as `http://127.0.0.1:8787`; `https://` or `wss://` for a server behind TLS,
   * whose certificate a private CA can vouch for when Deno runs with `--cert ca.pem`.
   */
  url: string;
  /**
   * The other servers of a cluster sharing one journal (`deno task serve
   * --journal postgres://...`, or `--path` on one KV file), to start from:
   * after the connection to one is lost or refused, the client tries the next.
   * Routing comes from the journal: a server that finds a session the host
   * opens owned by another live server (by its lease and that server's
   * heartbeat) sends the host there, and the client follows; a survivor takes
   * the sessions of a dead server over once its lease ended.
   */
  cluster?: readonly string[];
  /** This host's token; the server stores only its SHA-256. */
  token: string;
  /**
   * The registered host identity; `"default"` when omitted. The first
   * registration of an id fixes its token; reattach with the same id and token.
   */
  host?: string;
  /**
   * What this client may grant to the Environments it runs itself (HTTP and
   * extension bindings, Environments its Tools create); nothing by default.
   * Uploaded Components run under the server's allow-list instead.
   */
  allow?: AllowList;
  /**
   * The server's operator credential (its `serverToken`), needed only to register
   * a host id the server does not know yet; sent in the `brain-server-token` header.
   */
  serverToken?: string;
  /**
   * Replace another application instance connected as the same host (its open
   * calls end `unknown`). Without it a second instance is refused `host_in_use`.
   */
  takeover?: boolean;
  /** Longest delay (ms) between reconnect attempts, which back off from 50 ms; 2 000 by default. */
  maxReconnectDelayMs?: number;
  /** How often (ms) the client pings a server it has not heard from; 10 000 by default. */
  pingIntervalMs?: number;
  /**
   * How long (ms) after a call's deadline, or its cancellation, its caller waits for the
   * server to confirm the end before `ended` rejects `connection_lost`; 1 000 by default.
   * A call with neither waits as long as the server answers pings, or until a server
   * answers after a lost link: a live server owns the call's end.
   */
  deadlineGraceMs?: number;
  /**
   * Told of every change of the host connection: `attached`, `lost` (it dropped),
   * `failed` (an attempt was refused or could not connect) and `moved`, with the error
   * and the delay before the next attempt (the client retries until `close()`), and
   * `session_closed` when the server gave up a session's handle (it could not reopen
   * it after a reconnect, or ended it on its own: its store failed for good, another
   * Brain took the session over, the session was deleted), with the reason as the
   * error's `cause`: that handle has ended, and its calls fail `session_closed`.
   * A callback that throws is reported with `reportError` and changes nothing.
   */
  onConnection?: (event: HostConnectionEvent) => void;
}

/** A call's `start` frame, its deadline, the caller's signal, and the activation it names. */
interface StartFrame {
  frame: RequestFrame<"start">;
  deadline: number | undefined;
  signal: AbortSignal | undefined;
  activation: Activation | undefined;
}

/** A Brain server reached over one host connection; this process runs the sessions' Tools. */
export class RemoteBackend implements BrainBackend {
  #connection: HostConnection;
  #live = new Set<RemoteSession>();
  #allow: AllowList | undefined;
  #closed = false;
  /** The first close(), which every later call settles with. */
  #closedOnce: Promise<void> | undefined;

  constructor(
    { url, token, host = "default", serverToken, onConnection, cluster, maxReconnectDelayMs, allow, ...options }:
      RemoteBrainOptions,
  ) {
    if (typeof url !== "string" || typeof token !== "string") {
      throw new BrainError(
        "invalid_argument",
        `a remote Brain needs a url and a token (strings), as in new Brain({ url, token, host }); ` +
          `got url ${shownValue(url)} and ${typeof token === "string" ? "a token" : `token ${shownValue(token)}`}`,
      );
    }
    if (!isServerUrl(url)) {
      throw new BrainError(
        "invalid_argument",
        `url must be an http(s) or ws(s) URL, such as http://127.0.0.1:8787; got ${shownValue(url)}`,
      );
    }
    const servers = cluster === undefined ? undefined : readList("cluster", cluster) as string[];
    if (servers !== undefined && !servers.every((server) => typeof server === "string" && isServerUrl(server))) {
      throw new BrainError("invalid_argument", "cluster must be an array of http(s) or ws(s) server URLs");
    }
    checkToken("token", token);
    if (serverToken !== undefined) checkToken("serverToken", serverToken);
    const { takeover, ...durations } = options;
    for (const [name, value] of Object.entries({ maxReconnectDelayMs, ...durations })) {
      if (value !== undefined) checkTimerMs(name, value);
    }
    if (takeover !== undefined && typeof takeover !== "boolean") {
      throw new BrainError("invalid_argument", "takeover must be a boolean");
    }
    if (onConnection !== undefined && typeof onConnection !== "function") {
      throw new BrainError("invalid_argument", "onConnection must be a function");
    }
    checkName("a host id", host);
    this.#allow = checkAllowList(allow);
    this.#connection = new HostConnection({
      url,
      cluster: servers,
      token,
      host,
      serverToken,
      onEvent: onConnection,
      maxDelay: maxReconnectDelayMs,
      ...options,
    });
  }

  async create(
    { tools = [], environments, id = crypto.randomUUID(), host, model, agentloop }: CreateSessionOptions = {},
  ): Promise<BrainSession> {
    this.#assertOpen();
    checkName("a session id", id);
    refuseCredentials(host);
    refuseEnvironments(environments);
    const conversation = serverConversation(model, agentloop);
    return await this.#open(id, checkPlacedTools(tools), conversation, "create");
  }

  async get(
    id: string,
    { tools = [], environments, host, model, agentloop, waitMs }: GetSessionOptions = {},
  ): Promise<BrainSession> {
    this.#assertOpen();
    checkName("a session id", id);
    const listed = checkPlacedTools(tools);
    refuseCredentials(host);
    refuseEnvironments(environments);
    return await this.#open(id, listed, serverConversation(model, agentloop), "get", waitMs);
  }

  async delete(id: string): Promise<void> {
    this.#assertOpen();
    checkName("a session id", id);
    await Promise.allSettled([...this.#live].filter((session) => session.id === id).map((session) => session.end()));
    await this.#connection.request("delete", { session: id }, { retry: true });
  }

  async list(): Promise<SessionMeta[]> {
    this.#assertOpen();
    // Each session frozen, as every journal lists them.
    return (await this.#connection.request("list", {}, { retry: true })).map((meta) => deepFreeze(meta));
  }

  close(): Promise<void> {
    return this.#closedOnce ??= this.#close();
  }

  async #close(): Promise<void> {
    this.#closed = true;
    // Ending a handle waits for the server; one that stays unreachable does not keep the client open.
    await settledWithin(Promise.allSettled([...this.#live].map((session) => session.end())), CLOSE_WAIT_MS);
    await this.#connection.close();
  }

  async #open(
    id: string,
    tools: readonly PlacedTool[],
    conversation: HandleConversation,
    op: "create" | "get",
    waitMs?: number,
  ): Promise<RemoteSession> {
    const advertised = tools.map(({ advertised }) => advertised);
    const uploads = await Promise.all(tools.filter(isComponent).map(componentUpload));
    // Everything but an uploaded Component runs here, in this client's Environments, as an embedded Brain runs it.
    const local = tools.filter((placed) => !isComponent(placed));
    const workspaces = await bindEnvironments(id, local, this.#allow);
    for (const placed of local) {
      const { env, options } = placed;
      await admitImplementation(placed, {
        env,
        options,
        workspace: env && workspaces.get(env.name),
        allow: this.#allow,
      });
    }
    const created = op === "get" && tools.length > 0
      ? await restoreCreated(id, await this.#connection.request("read", { session: id }, { retry: true }), this.#allow)
      : [];
    const environments = new SessionEnvironments(id, uniqueBindings(tools).values(), workspaces, this.#allow, created);
    // A binding granted `model` reaches the session's server model through this client's own service,
    // each request a report of its call (RemoteSink.model), charged and journaled by the server.
    let modelService: ModelService | undefined;
    const execute: Executor = (placed, invocation, sink) =>
      dispatchCall({
        placed,
        invocation,
        sink,
        environments,
        workspace: placed.env && workspaces.get(placed.env.name),
        modelService: () => modelService ??= new ModelService(),
        resources: undefined,
      });
    const release = () => {
      environments.close();
      return modelService?.close();
    };
    const handle = crypto.randomUUID();
    // Handlers are in place before Brain can dispatch to the new handle; its uploads, before a reconnect declares it.
    this.#connection.addHandle(handle, id, tools, execute, conversation, uploads);
    let budgets: Budgets;
    try {
      if (op === "create") {
        const sent = await this.#withLackingBytes(uploads);
        budgets = await this.#connection.request("create", {
          handle,
          session: id,
          tools: advertised,
          ...(sent.length ? { uploads: sent } : {}),
          ...conversation,
        });
      } else {
        // The server gets the bytes it lacks first; the get names each Component by its hash.
        await this.#connection.provide(uploads);
        budgets = await this.#connection.request("get", {
          handle,
          session: id,
          ...(tools.length ? { tools: advertised } : {}),
          ...(uploads.length ? { uploads: uploads.map((upload) => wireUpload(upload, false)) } : {}),
          ...conversation,
          ...(waitMs === undefined ? {} : { waitMs }),
        }, { retry: true });
      }
    } catch (error) {
      this.#connection.removeHandle(handle);
      await release();
      throw error;
    }
    const session = new RemoteSession(this.#connection, id, handle, tools, workspaces, budgets, async (ended) => {
      this.#live.delete(ended);
      await release();
    });
    this.#live.add(session);
    this.#connection.watchHandle(handle, {
      closed: (error) => session.lose(error),
      reopened: (budgets) => session.rebudget(budgets),
    });
    return session;
  }

  /** Each Component placement's upload as `create` carries it, with bytes only for the hashes the server lacks. */
  async #withLackingBytes(uploads: readonly ComponentUpload[]): Promise<WireUpload[]> {
    if (uploads.length === 0) return [];
    const lacking = new Set(await this.#connection.request("lacking", { sha256: uploads.map(({ sha256 }) => sha256) }));
    return uploads.map((upload) => wireUpload(upload, lacking.has(upload.sha256)));
  }

  #assertOpen(): void {
    if (this.#closed) throw new BrainError("brain_closed", "this Brain is closed");
  }
}

function refuseCredentials(host: unknown): void {
  if (host !== undefined) {
    throw new BrainError(
      "invalid_argument",
      "a remote Brain's sessions belong to the host it connects as: give host and token to new Brain({ url, token, host })",
    );
  }
}

function refuseEnvironments(environments: readonly unknown[] | undefined): void {
  if (environments !== undefined && readList("environments", environments).length > 0) {
    throw new BrainError(
      "unsupported_runtime",
      "a remote Brain client places no Environment Tools: give environments to the Brain server's own sessions",
    );
  }
}

/** A session handle of a remote Brain: the same API as an embedded session's. */
class RemoteSession implements BrainSession {
  readonly id: string;
  #connection: HostConnection;
  #handle: string;
  #tools: Map<string, PlacedTool>;
  #workspaces: ReadonlyMap<string, string>;
  #budgets: Budgets;
  #ended = false;
  /** Why the server gave this handle up, when it did. */
  #lost: BrainError | undefined;
  #onEnd: (session: RemoteSession) => Promise<void>;

  constructor(
    connection: HostConnection,
    id: string,
    handle: string,
    tools: readonly PlacedTool[],
    workspaces: ReadonlyMap<string, string>,
    budgets: Budgets,
    onEnd: (session: RemoteSession) => Promise<void>,
  ) {
    this.id = id;
    this.#connection = connection;
    this.#handle = handle;
    this.#workspaces = workspaces;
    this.#budgets = budgets;
    this.#tools = new Map(tools.map((placed) => [placed.tool.name, placed]));
    this.#onEnd = onEnd;
  }

  get tools(): PlacedTool[] {
    return [...this.#tools.values()];
  }

  /** Real path of a binding's workspace on this client, when its grant has one (uploaded Components' are the server's). */
  workspace(envName: string): string | undefined {
    return this.#workspaces.get(envName);
  }

  /**
   * A new activation with the budgets the server applies to this session. Only its
   * id travels: calls started with it share one budget on the server, which keeps the
   * count; its counts here follow the server's as the call's frames come back.
   */
  activation(): Activation {
    return sessionActivation(this.id, this.#budgets);
  }

  async start(target: PlacedTool | string, input: JsonValue, options: CallOptions = {}): Promise<ToolCall> {
    return await this.#started(this.#startFrame(target, input, options));
  }

  /** Sends a call's `start` frame; the call as a {@linkcode ToolCall}, the caller's signal watched until it ends. */
  async #started({ frame, deadline, signal, activation }: StartFrame): Promise<ToolCall> {
    // A call cancelled before its start is waited for as one whose deadline is now.
    const until = frame.cancelled ? Date.now() : deadline;
    const { call: sequence } = await this.#connection.requestFrame(
      frame,
      until === undefined ? {} : { deadline: until },
    );
    const ended = this.#connection.awaitEnd(this.id, sequence, until, activation);
    const call = { session: this.id, call: sequence };
    let settled: CallEnd | undefined;
    ended.then((end) => settled = end, () => {});
    // The reason is checked here as an embedded call checks it, so a bad one is refused the same way; a call that
    // ended answers with its end even once the Brain closed, as an embedded one does. A cancelled call's caller
    // stops waiting, bounded as by a deadline now: a server that never answers holds it no longer.
    const cancel = (message?: string) =>
      promised(() => checkCancelReason(message)).then((reason) => {
        this.#connection.cancelledEnd(this.id, sequence);
        return this.#connection.request("cancel", { ...call, ...(reason === undefined ? {} : { message: reason }) }, {
          retry: true,
          deadline: Date.now(),
        }).catch((error) => settled ?? Promise.reject(error));
      });
    if (signal && !frame.cancelled) {
      const onAbort = () => cancel().catch(() => {});
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
      ended.finally(() => signal.removeEventListener("abort", onAbort)).catch(() => {});
    }
    return Object.freeze({ sequence, ended, cancel });
  }

  call(target: PlacedTool | string, input: JsonValue, options?: CallOptions): Promise<CallEnd> {
    let started: StartFrame;
    try {
      // The options are read and checked first, so one whose getters throw is refused like any bad argument.
      started = this.#startFrame(target, input, options);
    } catch (error) {
      return Promise.reject(error);
    }
    if (started.signal !== undefined) return this.#started(started).then((call) => call.ended);
    // Without a signal to watch, nothing but the end is needed: one wait from the start to the end.
    return this.#connection.startAndWait(started.frame, this.id, started.deadline, started.activation);
  }

  /**
   * A call's `start` frame, `cancelled` when the caller's signal had aborted already;
   * throws a bad argument before anything is sent.
   */
  #startFrame(target: PlacedTool | string, given: JsonValue, options: CallOptions = {}): StartFrame {
    this.#assertOpen();
    const placed = resolveTarget(this.id, this.#tools, target);
    const { input, options: checked } = checkCallArguments(placed.tool.name, given, options);
    checkActivationOf(this.id, checked.activation);
    const { deadline, signal } = checked;
    const traceparent = checked.traceparent ?? traceparentOf();
    const frame: RequestFrame<"start"> = { id: 0, op: "start", handle: this.#handle, tool: placed.tool.name, input };
    if (deadline !== undefined) frame.deadline = deadline;
    if (checked.activation) frame.activation = checked.activation.id;
    if (traceparent !== undefined) frame.traceparent = traceparent;
    if (signal?.aborted) frame.cancelled = true;
    return { frame, deadline, signal, activation: checked.activation };
  }

  /**
   * Sends a user message to the session's Agentloop, which runs on the server
   * with the server model the session names and calls this host's Tools. Not
   * resent after a lost connection: it fails `connection_lost`, and the loop
   * may have taken the message. Aborting `signal` stops only the wait.
   */
  async send(content: string, options?: SendOptions): Promise<AssistantMessage> {
    this.#assertOpen();
    const { signal } = checkSendArguments(content, options);
    // Frozen, as the embedded reply is: it is the committed record.
    const reply = this.#connection.request("send", { handle: this.#handle, content }).then((message) =>
      deepFreeze(message)
    );
    return await awaitReply(reply, signal);
  }

  /** Interrupts the server Agentloop's running activation: its pending model call ends `unknown`; Tools keep running. */
  interrupt(): void {
    if (this.#ended) return;
    this.#connection.request("interrupt", { handle: this.#handle }).catch(() => {});
  }

  async read(options: ReadOptions = {}): Promise<JournalRecord[]> {
    const read = checkReadOptions("read options", options);
    // Each record frozen, as every journal's are; the list is the caller's, as an embedded read's is.
    const records = await this.#connection.request("read", { session: this.id, ...read }, { retry: true });
    return records.map((record) => deepFreeze(record));
  }

  records(options: { from?: number; signal?: AbortSignal } = {}): AsyncIterable<JournalRecord> {
    const { from, signal } = checkReadOptions("records options", options, ["signal"]);
    return this.#connection.follow(this.id, from, signal);
  }

  /** The server reopened this handle, perhaps on another server of its cluster: later activations get its budgets. */
  rebudget(budgets: Budgets): void {
    this.#budgets = budgets;
  }

  /** The server gave this handle up on its own (`error` says why): it ends here too, without asking the server. */
  lose(error: BrainError): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#lost = error;
    this.#tools.clear();
    this.#onEnd(this).catch(() => {});
  }

  #assertOpen(): void {
    if (this.#lost) throw new BrainError("session_closed", this.#lost.message, { cause: this.#lost.cause });
    if (this.#ended) throw handleEnded(this.id);
  }

  async end(): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    this.#connection.removeHandle(this.#handle);
    this.#tools.clear();
    try {
      await this.#connection.request("end", { handle: this.#handle }, { retry: true });
    } catch (error) {
      if (!(error instanceof BrainError && error.code === "session_closed")) throw error;
    } finally {
      await this.#onEnd(this);
    }
  }
}

/**
 * What travels for a session's conversation: only the name of a server model
 * (a provider object and its credentials cannot leave this process, and the
 * server's never reach it) and JSON Agentloop options.
 */
function serverConversation(model: unknown, agentloop: AgentloopOptions | undefined): HandleConversation {
  if (model !== undefined && (typeof model !== "string" || model === "")) {
    throw new BrainError(
      "invalid_argument",
      'a remote Brain runs sessions with the server\'s models: give the name of one, such as model: "default"',
    );
  }
  if (model === undefined) return {};
  if (agentloop === undefined) return { model };
  const { system, toolDeadlineMs } = agentloop;
  if (system !== undefined && typeof system !== "string") {
    throw new BrainError("invalid_argument", "agentloop.system must be a string");
  }
  if (toolDeadlineMs !== undefined && !(typeof toolDeadlineMs === "number" && toolDeadlineMs > 0)) {
    throw new BrainError("invalid_argument", `toolDeadlineMs must be positive, got ${shownValue(toolDeadlineMs)}`);
  }
  return {
    model,
    agentloop: {
      ...(system === undefined ? {} : { system }),
      ...(toolDeadlineMs === undefined
        ? {}
        : { toolDeadlineMs: Number.isFinite(toolDeadlineMs) ? toolDeadlineMs : null }),
    },
  };
}
