import { readRecord } from "../../outcome/known_keys.ts";
import type { Journal } from "../../journal/journal.ts";
import { SavedHosts } from "../../journal/saved_hosts.ts";
import type { SessionCreateOptions } from "../../journal/host_sessions.ts";
import { BrainError } from "../../outcome/errors.ts";
import { fail } from "../../outcome/outcome.ts";
import type { JsonValue } from "../../outcome/json.ts";
import type { Activation } from "../../session/activation.ts";
import type { Session } from "../../session/session.ts";
import { type CallSink, endedCause, type Invocation } from "../../contract/call.ts";
import { errorFrame, type ServerFrame } from "../protocol.ts";
import { hashToken } from "../../embedded/host_token.ts";
import { checkToken, isToken } from "../../util/tokens.ts";
import { sameText } from "../../util/same_text.ts";
import { checkName, hostSessionId, hostSessionKey, isHostSessionKey } from "../../util/names.ts";
import { overLimit, type ServerLimits } from "./limits.ts";
import { UploadedComponents } from "../uploaded_components.ts";
import { CallMap } from "../call_map.ts";
import { Outbox } from "../outbox.ts";
import { onAborted } from "../../util/signal.ts";
import type { TelemetryEntry } from "../../component/sandbox.ts";

/** A call dispatched to a host and not yet finished by it. */
interface Inflight {
  sink: CallSink;
  socket: WebSocket;
  /** Set when the host itself reported the end, so no `abort` is sent after it. */
  endedByHost: boolean;
}

type InvokeFrame = Extract<ServerFrame, { t: "invoke" }>;

/** A host's answer to a parse request: the parsed value, or the issues its schema found. */
export type ParsedValue = { value: JsonValue } | { issues: ParseIssue[] };

/** One issue a host's schema found: where, its Zod code, and what it says. */
export interface ParseIssue {
  path: (string | number)[];
  code: string;
  message: string;
}

/**
 * Brain's record of one registered host: its identity and token hash, its
 * current socket and the client instance behind it, its open session handles,
 * and the calls dispatched to it that it has not finished. Handles outlive the
 * socket; in-flight calls do not.
 */
export class RegisteredHost {
  /** The host identity. */
  readonly id: string;
  /** SHA-256 of its token, fixed at first registration. */
  readonly tokenHash: string;
  /** Open session handles by the client's handle id. */
  readonly handles: Map<string, Session> = new Map();
  /** Activations named by this host's calls, by session and activation id; each is one server-side budget. */
  readonly #activations: Map<string, Map<string, Activation>> = new Map();
  /** Components this host uploaded, by content hash; another host never sees them. */
  readonly components: UploadedComponents;
  #socket: WebSocket | undefined;
  #instance: string | undefined;
  #inflight = new CallMap<Inflight>();
  /** Sinks of the calls this host finished last, oldest first: a later finish of one is recorded late, as embedded. */
  #settled = new CallMap<CallSink>();
  #settledOrder: [session: string, call: number][] = [];
  /** Invokes held while a `start` of the same handle is being committed, so its reply can carry them. */
  #held: { handle: string; frame: InvokeFrame }[] = [];
  #holds = new Map<string, number>();
  /** Parse requests sent to the host, by ask id: its Zod schemas parse what its uploaded Components take and give. */
  #asks = new Map<number, PromiseWithResolvers<ParsedValue>>();
  #nextAsk = 1;
  #limits: ServerLimits;
  #keyPrefix: RegExp | undefined;
  #started = 0;
  /** The server is shutting down: its sessions end, and the handles holding them are kept for the next server. */
  #stopping = false;

  constructor(id: string, tokenHash: string, limits: ServerLimits) {
    this.id = id;
    this.tokenHash = tokenHash;
    this.#limits = limits;
    this.components = new UploadedComponents(limits.maxUploadsPerHost);
  }

  /**
   * The journal key of this host's session `session`: each host has its own session
   * ids, so another host's sessions are never found, listed or refused by id.
   */
  sessionKey(session: string): string {
    return hostSessionKey(this.id, session);
  }

  /** The session id this host knows the journal key `key` by. */
  sessionId(key: string): string {
    return hostSessionId(this.id, key);
  }

  /** `error` as this host reads it: its session keys in the message named by the host's own ids. */
  shownError<E extends { message: string }>(error: E): E {
    this.#keyPrefix ??= new RegExp(`(?<![\\w.~-])${this.id.replaceAll(".", "\\.")}~(?=[\\w-])`, "g");
    return { ...error, message: error.message.replace(this.#keyPrefix, "") };
  }

  /** True when the journal key `key` is one of this host's sessions'. */
  keeps(key: string): boolean {
    return isHostSessionKey(this.id, key);
  }

  /** Throws `limit_exceeded` when the host already holds `maxHandlesPerHost` session handles. */
  checkHandleRoom(): void {
    const max = this.#limits.maxHandlesPerHost;
    if (this.handles.size >= max) {
      throw overLimit("maxHandlesPerHost", max, `host ${this.id} holds ${max} session handles`);
    }
  }

  /** Throws `limit_exceeded` when `following` record streams are already `maxStreamsPerHost`. */
  checkStreamRoom(following: number): void {
    const max = this.#limits.maxStreamsPerHost;
    if (following >= max) {
      throw overLimit("maxStreamsPerHost", max, `host ${this.id} follows ${following} record streams`);
    }
  }

  /**
   * Runs `create`, which creates one session of this host with the options
   * that count it in the journal: past `maxSessionsPerHost` sessions of the
   * host there (whichever servers created them, however many at once) it
   * throws `limit_exceeded` and creates nothing.
   */
  async createSession<T>(create: (counted: SessionCreateOptions) => Promise<T>): Promise<T> {
    const max = this.#limits.maxSessionsPerHost;
    try {
      return await create({ maxHostSessions: max });
    } catch (error) {
      const details = error instanceof BrainError ? error.details as { limit?: unknown } | undefined : undefined;
      if (details?.limit !== "maxHostSessions") throw error;
      throw overLimit("maxSessionsPerHost", max, `host ${this.id} has ${max} sessions`);
    }
  }

  /**
   * Takes the room of one more call in flight under `maxCallsPerHost`, before
   * any intent is journaled, or throws `limit_exceeded`; {@linkcode callEnded} frees it.
   */
  reserveCall(): void {
    const max = this.#limits.maxCallsPerHost;
    if (this.#started >= max) {
      throw overLimit("maxCallsPerHost", max, `host ${this.id} has ${this.#started} calls in flight`);
    }
    this.#started++;
  }

  /** Frees the room {@linkcode reserveCall} took, once its call ended or did not start. */
  callEnded(): void {
    this.#started--;
  }

  /** True while a socket is attached. */
  get connected(): boolean {
    return this.#socket?.readyState === WebSocket.OPEN;
  }

  /**
   * True when a socket of client `instance` may become the host's connection:
   * none is connected, the connected one is the same instance's (a reconnect),
   * or `takeover` is asked for.
   */
  admits(instance: string, takeover: boolean): boolean {
    const socket = this.#socket;
    const live = socket !== undefined && socket.readyState <= WebSocket.OPEN;
    return takeover || !live || this.#instance === instance;
  }

  /** Makes `socket` the host's connection; a previous one is closed and its calls are lost. */
  attach(socket: WebSocket, instance: string): void {
    const previous = this.#socket;
    this.#socket = socket;
    this.#instance = instance;
    if (previous) {
      this.#lose(previous);
      previous.close(4000, "replaced by a new connection of the same host");
    }
  }

  /** Forgets `socket` when it is still the current one: every unfinished call dispatched on it ends `unknown`. */
  detach(socket: WebSocket): void {
    if (this.#socket !== socket) return;
    this.#socket = undefined;
    this.#lose(socket);
  }

  /** Closes the current socket from Brain's side, as a network failure would. */
  drop(code = 4001, reason = "dropped by the server"): void {
    this.#socket?.close(code, reason);
  }

  /**
   * Sends one committed call to the host, once. Without an open socket nothing is
   * sent and the call fails with `host_disconnected`.
   */
  dispatch(handle: string, invocation: Invocation, sink: CallSink): void {
    const socket = this.#socket;
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      sink.finish({
        outcome: fail("host_disconnected", `host ${this.id} is not connected; the call was not sent`, {
          retryable: true,
        }),
      }, "error").catch(() => {});
      return;
    }
    const { sessionId: session, sequence: call, tool, input, deadline } = invocation;
    const inflight: Inflight = { sink, socket, endedByHost: false };
    this.#inflight.set(session, call, inflight);
    onAborted(sink.signal, () => {
      if (inflight.endedByHost || this.#inflight.get(session, call) !== inflight) return;
      const cause = endedCause(sink.signal.reason) ?? "cancelled";
      if (this.#unhold(session, call)) return;
      send(socket, { t: "abort", session: this.sessionId(session), call, cause });
    });
    const frame: InvokeFrame = { t: "invoke", handle, session, call, tool, input };
    if (deadline !== undefined) frame.deadline = deadline;
    if (invocation.traceparent !== undefined) frame.traceparent = invocation.traceparent;
    if (this.#holds.has(handle)) this.#held.push({ handle, frame });
    else send(socket, this.#shown(frame));
  }

  /** Holds invokes for `handle` until {@linkcode release}: a `start` on it is being committed. */
  hold(handle: string): void {
    this.#holds.set(handle, (this.#holds.get(handle) ?? 0) + 1);
  }

  /**
   * Ends one hold of `handle`. Returns the invoke of call `call` when it was held:
   * the start's reply carries it instead. Invokes held before it are sent now.
   */
  release(handle: string, session: string | undefined, call: number | undefined): InvokeFrame | undefined {
    const left = (this.#holds.get(handle) ?? 1) - 1;
    if (left === 0) this.#holds.delete(handle);
    else this.#holds.set(handle, left);
    if (this.#held.length === 0) return undefined;
    // Usually the start's own invoke is the first held: nothing held before it waits, and it leaves at once.
    const first = this.#held[0].frame;
    if (first.session === session && first.call === call && (left > 0 || this.#held.length === 1)) {
      this.#held.shift();
      return first;
    }
    const index = this.#held.findIndex(({ frame }) => frame.session === session && frame.call === call);
    const held = this.#held[index]?.frame;
    const flushed = this.#held.filter((held, at) =>
      held.handle === handle && (left === 0 ? at !== index : index >= 0 && at < index)
    );
    this.#held = this.#held.filter((held, at) => at !== index && !flushed.includes(held));
    const socket = this.#socket;
    if (socket) { for (const { frame } of flushed) send(socket, this.#shown(frame)); }
    return held;
  }

  /** The sink of a call dispatched to this host and not yet finished by it. */
  sink(session: string, call: number): CallSink {
    const sink = this.#inflight.get(session, call)?.sink ?? this.#settled.get(session, call);
    if (!sink) {
      throw new BrainError("call_not_found", `call ${call} of session ${session} is not running on this host`);
    }
    return sink;
  }

  /** Notes that the host is ending the call itself (a finish, or a failed result), so no `abort` follows. */
  endedByHost(session: string, call: number): void {
    const inflight = this.#inflight.get(session, call);
    if (inflight) inflight.endedByHost = true;
  }

  /** Forgets a call the host has finished. */
  settle(session: string, call: number): void {
    const inflight = this.#inflight.get(session, call);
    if (!inflight) return;
    this.#inflight.delete(session, call);
    this.#settled.set(session, call, inflight.sink);
    this.#settledOrder.push([session, call]);
    if (this.#settledOrder.length > SETTLED_KEPT) this.#settled.delete(...this.#settledOrder.shift()!);
  }

  /**
   * Asks the host to parse `value` with the `io` schema of `tool` on `handle`, as the
   * declaring application's Zod schema does it (defaults, transforms, async checks).
   */
  parse(handle: string, tool: string, io: "input" | "output", value: JsonValue): Promise<ParsedValue> {
    const socket = this.#socket;
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      return Promise.reject(new BrainError("connection_lost", `host ${this.id} is not connected to parse ${io}`));
    }
    const ask = this.#nextAsk++;
    const answer = Promise.withResolvers<ParsedValue>();
    this.#asks.set(ask, answer);
    send(socket, { t: "parse", ask, handle, tool, io, value });
    return answer.promise;
  }

  /**
   * Forwards an uploaded Component's telemetry `entry` to the connected host, for the listener of
   * `handle`'s Component; best-effort, so with no open connection it is dropped.
   */
  telemetry(handle: string, entry: TelemetryEntry): void {
    const socket = this.#socket;
    if (socket?.readyState === WebSocket.OPEN) send(socket, { t: "telemetry", handle, entry });
  }

  /** Settles a parse request with the host's answer. */
  parsed(ask: number, answer: ParsedValue): void {
    this.#asks.get(ask)?.resolve(answer);
    this.#asks.delete(ask);
  }

  /**
   * Holds `session` as the host's handle `id`. Should the session end on its own
   * while held (its store failed for good, another Brain took it over, it was
   * deleted), the handle is let go and the connected client is told at once with a
   * `gone` push; a client that is not connected hears it when it reattaches.
   */
  keep(id: string, session: Session): void {
    // Checked here, with no await before the set: handles opened at once cannot all pass a check made earlier.
    if (this.handles.has(id)) throw new BrainError("invalid_argument", `session handle ${id} is already open`);
    this.checkHandleRoom();
    this.handles.set(id, session);
    onAborted(session.closed, () => {
      if (this.handles.get(id) !== session) return;
      this.handles.delete(id);
      this.forget(session.id);
      const socket = this.#socket;
      if (socket?.readyState !== WebSocket.OPEN || this.#stopping) return;
      send(socket, { t: "gone", handle: id, error: this.shownError(errorFrame(session.closed.reason)) });
    });
  }

  /**
   * The server is shutting down: sessions that end from now on are not given up
   * to the client, which reattaches them to the next server.
   */
  stopping(): void {
    this.#stopping = true;
  }

  /**
   * The activation this host names `id` in `session` (a journal key), `made`
   * the first time. Only the last `MAX_NAMED_ACTIVATIONS` named
   * per session are kept: a host naming one it named before those gets new
   * budgets, as it would with a new id, and no host grows the server's memory
   * by naming ids.
   */
  activation(session: string, id: string, made: () => Activation): Activation {
    let named = this.#activations.get(session);
    if (!named) this.#activations.set(session, named = new Map());
    let activation = named.get(id);
    if (activation) named.delete(id);
    else {
      activation = made();
      if (named.size >= MAX_NAMED_ACTIVATIONS) named.delete(named.keys().next().value!);
    }
    named.set(id, activation);
    return activation;
  }

  /** Forgets a session's activations once no handle holds it. */
  forget(session: string): void {
    if (![...this.handles.values()].some((open) => open.id === session)) this.#activations.delete(session);
  }

  /** An invoke as this host reads it: under its own session id (held invokes keep the journal key). */
  #shown(frame: InvokeFrame): InvokeFrame {
    return { ...frame, session: this.sessionId(frame.session) };
  }

  /** Removes a held invoke of a call that ended before its start was answered; true when it was held. */
  #unhold(session: string, call: number): boolean {
    const index = this.#held.findIndex(({ frame }) => frame.session === session && frame.call === call);
    if (index < 0) return false;
    this.#held.splice(index, 1);
    return true;
  }

  #lose(socket: WebSocket): void {
    const lost: CallSink[] = [];
    for (const [session, call, inflight] of this.#inflight.entries()) {
      if (inflight.socket !== socket) continue;
      this.#inflight.delete(session, call);
      lost.push(inflight.sink);
    }
    this.#held = [];
    for (const ask of this.#asks.values()) {
      ask.reject(new BrainError("connection_lost", "the host's connection was lost"));
    }
    this.#asks.clear();
    for (const sink of lost) if (!sink.signal.aborted) sink.finish(undefined, "unknown").catch(() => {});
  }
}

const outboxes = new WeakMap<WebSocket, Outbox>();

/**
 * Sends one frame with the others written to `socket` in the same tick; a socket
 * that is closing drops it, and its close settles the calls.
 */
export function send(socket: WebSocket, frame: ServerFrame): void {
  outboxOf(socket).write(frame);
}

/** The outbox frames to `socket` are batched in. */
export function outboxOf(socket: WebSocket): Outbox {
  let outbox = outboxes.get(socket);
  if (!outbox) outboxes.set(socket, outbox = new Outbox(socket));
  return outbox;
}

/** Finished calls per host whose later reports still reach their call (to be recorded late, or refused as ended). */
const SETTLED_KEPT = 256;

/** How many activations a host has named per session are kept (see `RegisteredHost.activation`). */
export const MAX_NAMED_ACTIVATIONS = 1_024;

/** Who a server admits: the operator credential that registers new host ids, and hosts configured up front. */
export interface HostAdmission {
  /** The operator credential a client presents (the `brain-server-token` header) to register a new host id. */
  serverToken?: string;
  /** Host ids and their tokens (or `sha-256:` token hashes) the server admits without the operator credential. */
  hostTokens?: Readonly<Record<string, string>>;
}

/**
 * Every host registered with this Brain. A host id's token is fixed by the
 * server's configuration, its first registration, or the sessions placed in it,
 * whose metadata keeps the hash. A new id registers only with the operator credential.
 */
export class HostRegistry {
  #hosts = new Map<string, RegisteredHost>();
  #configured = new Map<string, Promise<string>>();
  #saved: SavedHosts;
  #serverTokenHash: Promise<string> | undefined;
  #limits: ServerLimits;
  #stopping = false;

  constructor(journal: Journal, admission: HostAdmission, limits: ServerLimits) {
    this.#saved = new SavedHosts(journal);
    this.#limits = limits;
    const { serverToken, hostTokens } = admission;
    if (serverToken !== undefined) this.#serverTokenHash = hashToken(checkToken("serverToken", serverToken));
    for (const [id, token] of Object.entries(hostTokens === undefined ? {} : readRecord("hostTokens", hostTokens))) {
      checkName("a host id in hostTokens", id);
      checkToken(`hostTokens.${id}`, token);
      this.#configured.set(id, token.startsWith("sha-256:") ? Promise.resolve(token) : hashToken(token));
    }
    if (this.#serverTokenHash === undefined && this.#configured.size === 0) {
      throw new BrainError(
        "invalid_argument",
        "a Brain server admits only hosts it was told about: give serverToken (BRAIN_SERVER_TOKEN) or hostTokens",
      );
    }
  }

  /**
   * Checks a connecting host without registering anything: a known id needs its
   * token; a new id also needs `serverToken` to match the operator credential.
   * Resolves the registration to {@linkcode admit} once the socket is upgraded; `registers` when the id is new.
   */
  async authenticate(
    id: string,
    token: string | undefined,
    serverToken: string | undefined,
  ): Promise<{ id: string; tokenHash: string; registers?: true }> {
    const refused = new BrainError("unauthorized", `wrong or missing credentials for host ${id}`);
    // A token Brain would never have accepted is wrong without hashing it (it may be a megabyte).
    if (!isToken(token)) throw refused;
    const tokenHash = await hashToken(token);
    const known = await this.#knownHash(id);
    if (known !== undefined) {
      if (!sameText(known, tokenHash)) throw refused;
      return { id, tokenHash };
    }
    const operator = this.#serverTokenHash && isToken(serverToken)
      ? sameText(await this.#serverTokenHash, await hashToken(serverToken))
      : false;
    if (!operator) throw refused;
    this.checkRoom(id);
    return { id, tokenHash, registers: true };
  }

  /**
   * Throws `limit_exceeded` when registering the new id `id` would pass `maxHosts`. Synchronous, so a server calls
   * it again right before {@linkcode admit} with no await between: registrations authenticated at once cannot all
   * pass it.
   */
  checkRoom(id: string): void {
    if (this.#hosts.has(id) || this.#hosts.size < this.#limits.maxHosts) return;
    throw overLimit("maxHosts", this.#limits.maxHosts, `cannot register host ${id}`);
  }

  /** Registers an authenticated host (once its socket is upgraded); a concurrent registration of the id wins. */
  admit(registration: { id: string; tokenHash: string }): RegisteredHost | undefined {
    let host = this.#hosts.get(registration.id);
    if (!host) {
      host = new RegisteredHost(registration.id, registration.tokenHash, this.#limits);
      if (this.#stopping) host.stopping();
      this.#hosts.set(registration.id, host);
    }
    return sameText(host.tokenHash, registration.tokenHash) ? host : undefined;
  }

  /**
   * The server is shutting down: each host keeps its handles through the end of
   * their sessions here, to reattach them to the next server.
   */
  stopping(): void {
    this.#stopping = true;
    for (const host of this.#hosts.values()) host.stopping();
  }

  /** Closes every host socket; their unfinished calls end `unknown`. */
  closeAll(): void {
    for (const host of this.#hosts.values()) host.drop(1001, "the Brain server is shutting down");
  }

  /** A registered host by id. */
  get(id: string): RegisteredHost | undefined {
    return this.#hosts.get(id);
  }

  async #knownHash(id: string): Promise<string | undefined> {
    const registered = this.#hosts.get(id)?.tokenHash ?? await this.#configured.get(id);
    if (registered !== undefined) return registered;
    return await this.#saved.tokenHash(id);
  }
}
