import { errorText } from "../../util/error_text.ts";
import { errorFromWire } from "../../outcome/wire_error.ts";
import type { JournalRecord } from "../../journal/records.ts";
import type { CallEnd } from "../../session/call_state.ts";
import { BrainError } from "../../outcome/errors.ts";
import { fail } from "../../outcome/outcome.ts";
import { findNonJson, type JsonValue } from "../../outcome/json.ts";
import { issuesJson } from "../../outcome/issues.ts";
import { endedReason, type Invocation } from "../../contract/call.ts";
import type { PlacedTool } from "../../contract/placement.ts";
import { callAt } from "../../util/timer.ts";
import { RacedAbortController } from "../../util/signal.ts";
import { RecentKeys } from "../../util/recent_keys.ts";
import {
  type Budgets,
  type ClientFrame,
  COMPONENTS_REOPENED,
  decodeServerFrames,
  HOST_IN_USE,
  HOST_PATH,
  isMalformed,
  type Malformed,
  MOVED,
  type NoticeOf,
  PROTOCOL_VERSION,
  refusedReply,
  type Replies,
  type RequestFrame,
  type RequestOf,
  type RequestOp,
  SERVER_TOKEN_HEADER,
  type ServerFrame,
  type StartReply,
  type Usage,
  type WireAgentloop,
} from "../protocol.ts";
import { type Activation, countedElsewhere } from "../../session/activation.ts";
import { CallMap } from "../call_map.ts";
import { Outbox } from "../outbox.ts";
import { HostSocket } from "./host_socket.ts";
import { type ComponentUpload, wireUpload } from "./component_upload.ts";
import { Component, telemetryListener } from "../../component/component.ts";
import { RecordStream } from "./record_stream.ts";
import { RemoteSink, type Report } from "./remote_sink.ts";
import { traceHostedRun } from "../../telemetry/hosted_run_trace.ts";
import { within } from "../../telemetry/within.ts";

/** What happened to the host connection: each change of state, with the failure behind it. */
export interface HostConnectionEvent {
  /**
   * `attached`: requests flow; `lost`: an attached connection dropped;
   * `failed`: an attempt to connect failed (`unauthorized`, `host_in_use`,
   * `connection_failed` for a TLS handshake that failed, such as an untrusted
   * certificate, or `connection_lost`); `moved`: the server sent the host to the server of the
   * cluster that owns one of its sessions, at `to`. After `lost`, `failed` and
   * `moved` the client tries again in `retryInMs`. `session_closed`: the server
   * gave up the handle of `session`, with `error.cause` saying why: it could not
   * reopen it after a reconnect (such as `session_not_found`), or it ended it on
   * its own while connected (`storage_unavailable` when its store refused a call's
   * end for good, `fenced` when another Brain took the session over,
   * `session_not_found` when the session was deleted). That handle is ended, its
   * calls whose end could not be committed have failed, and everything asked of it
   * fails `session_closed` at once. Open the session again with
   * `brain.sessions.get(id, { tools })` if it still exists.
   */
  type: "attached" | "lost" | "failed" | "moved" | "session_closed";
  /** The server the event happened with. */
  url: string;
  /** The session whose handle a `session_closed` ended. */
  session?: string;
  /** Where a `moved` host goes next: the URL of the server that owns its session, from the cluster's journal. */
  to?: string;
  /** Why the connection was lost or refused. */
  error?: BrainError;
  /** Delay before the next attempt. */
  retryInMs?: number;
}

/** Where and as whom a host connects. */
export interface HostConnectionOptions {
  /** The Brain server's base URL, `http://` or `ws://`. */
  url: string;
  /**
   * Further servers of the same cluster, tried in turn after the connection to
   * one was lost or refused. A server that knows another owns the host's
   * session sends the host there ({@linkcode MOVED}), whether or not it is listed.
   */
  cluster?: readonly string[];
  /** The host token; the server keeps only its hash. */
  token: string;
  /** The registered host identity. */
  host: string;
  /** The server's operator credential, to register a new host id. */
  serverToken?: string;
  /** First reconnect delay in ms; doubled per failed attempt. */
  minDelay?: number;
  /** Longest reconnect delay in ms. */
  maxDelay?: number;
  /** How often (ms) the client pings a server it has not heard from; one unanswered ping loses the link. */
  pingIntervalMs?: number;
  /** How long after a call's deadline, or its cancellation, its caller waits for Brain to confirm the end before giving up. */
  deadlineGraceMs?: number;
  /** Replace another instance of the same host that is connected, instead of being refused `host_in_use`. */
  takeover?: boolean;
  /** Told of every change of the connection's state. */
  onEvent?: (event: HostConnectionEvent) => void;
}

/** How a request behaves when the connection is lost. */
export interface RequestOptions {
  /** The request is idempotent: resent after a reconnect instead of failing with `connection_lost`. */
  retry?: boolean;
  /** Only valid on the connection of this generation: reports of a dispatched call. */
  generation?: number;
  /** A call's deadline: still unanswered once it and the grace have passed, the request fails `connection_lost`. */
  deadline?: number;
}

interface Pending {
  frame: Extract<ClientFrame, { id: number }>;
  retry: boolean;
  generation: number | undefined;
  sent: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * A caller's wait for the end of a call it started, bounded by the call's deadline when it has one, and the
 * activation it named for the call, whose counts follow the server's.
 */
interface EndWait {
  end: PromiseWithResolvers<CallEnd>;
  disarm: (() => void) | undefined;
  activation: Activation | undefined;
}

/** A call's end pushed before its caller asked, or the error its end could not commit with, and its usage. */
interface EarlyEnd {
  end?: CallEnd;
  error?: BrainError;
  usage?: Usage;
}

/** What a handle the server opened is told: that the server gave it up, or that it was reopened with new budgets. */
export interface HandleWatch {
  /** The server gave the handle up on its own; `error` says why. */
  closed(error: BrainError): void;
  /** The server reopened the handle (after a reconnect, or on another server of its cluster) with these budgets. */
  reopened(budgets: Budgets): void;
}

/** Runs one call dispatched to a handle, reporting to `sink`. */
export type Executor = (placed: PlacedTool, invocation: Invocation, sink: RemoteSink) => void;

interface HostedHandle {
  session: string;
  tools: ReadonlyMap<string, PlacedTool>;
  conversation: HandleConversation;
  /** Its Components' uploads: a server that reopens the handle places them again. */
  uploads: readonly ComponentUpload[];
  execute: Executor;
  /** Set once the server opened the handle: told when the server gives it up or reopens it. */
  watch?: HandleWatch;
  /** Why the server gave the handle up before it was watched. */
  gone?: BrainError;
}

/** The server model a handle's session names and its Agentloop options, resent when the handle is reattached. */
export interface HandleConversation {
  /** The server model's name. */
  model?: string;
  /** Agentloop options as they travel. */
  agentloop?: WireAgentloop;
}

type State = "connecting" | "attached" | "waiting" | "closed";

/**
 * The SDK side of the host connection: one WebSocket shared by every session
 * and Tool of one Brain client. Requests wait for the connection; dispatched
 * calls run with their handle's executor. A lost connection aborts local
 * in-flight calls, fails requests that were sent and are not idempotent, and
 * reconnects the same host with exponential backoff until `close()`, telling
 * `onEvent` each time. Nothing that was dispatched is ever run again.
 */
export class HostConnection {
  #options:
    & Required<Omit<HostConnectionOptions, "onEvent" | "serverToken" | "cluster">>
    & Pick<HostConnectionOptions, "onEvent" | "serverToken" | "cluster">;
  #instance = crypto.randomUUID();
  #socket: HostSocket | undefined;
  #outbox: Outbox | undefined;
  #state: State = "connecting";
  /** Why the last attempt to connect failed; requests made before the next attempt fail with it. */
  #failure: BrainError | undefined;
  #refused: BrainError | undefined;
  /** Where the server sent this host, when it closed the socket with {@linkcode MOVED}. */
  #moved: string | undefined;
  /** Increments with every attached connection; a call's reports are valid only on the generation it arrived on. */
  #generation = 0;
  #attempt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #pinger: ReturnType<typeof setInterval> | undefined;
  #heard = true;
  #nextId = 1;
  #pending = new Map<number, Pending>();
  #handles = new Map<string, HostedHandle>();
  /** Handles the server could not reopen for now, by the timer that asks again. */
  #reopening = new Map<string, ReturnType<typeof setTimeout>>();
  #running = new CallMap<AbortController>();
  /** Calls this client was sent to run, so a server that sends one again (a replay) never runs it twice. */
  #invoked = new RecentKeys(INVOKED_KEPT);
  #streams = new Map<number, RecordStream>();
  #followers = new Set<RecordStream>();
  #ends = new CallMap<EndWait>();
  /** Ends pushed before their caller asked: the `start` reply and the end arrived in one batch of frames. */
  #early = new CallMap<EarlyEnd>();
  #socketClosed: Promise<void> = Promise.resolve();
  /** The protocol version the server of the current socket speaks, as it named it in its upgrade's answer. */
  #serverProtocol = 1;

  constructor(options: HostConnectionOptions) {
    this.#options = {
      ...options,
      minDelay: options.minDelay ?? 50,
      maxDelay: options.maxDelay ?? 2_000,
      pingIntervalMs: options.pingIntervalMs ?? 10_000,
      deadlineGraceMs: options.deadlineGraceMs ?? 1_000,
      takeover: options.takeover ?? false,
    };
    this.#urls = [options.url, ...options.cluster ?? []];
    this.#connect();
  }

  /** The server this connection tries now; the next of the cluster after each loss or refusal. */
  #urls: string[] = [];
  #at = 0;

  get #url(): string {
    return this.#urls[this.#at];
  }

  /** Sends one request and resolves with its reply's value. */
  request<O extends RequestOp>(
    op: O,
    body: Omit<RequestOf<O>, "op">,
    options: RequestOptions = {},
  ): Promise<Replies[O]> {
    return this.requestFrame({ id: 0, op, ...body } as unknown as RequestFrame<O>, options);
  }

  /** Sends one request frame built by the caller, its `id` first (set here), and resolves with its reply's value. */
  requestFrame<O extends RequestOp>(frame: RequestFrame<O>, options: RequestOptions = {}): Promise<Replies[O]> {
    const { promise, resolve, reject } = Promise.withResolvers<Replies[O]>();
    this.#enqueue(frame, options, resolve as (value: unknown) => void, reject);
    return promise;
  }

  /**
   * The end of a call this client started: Brain pushes it, and after a
   * reconnect it is asked for again, since reading it is idempotent. With a
   * `deadline`, it rejects `connection_lost` once the deadline and a grace have
   * passed without Brain confirming the end, whatever the link does.
   * Call it right after the `start` reply, before the push can arrive. The
   * counts of `activation`, the one named for the call, follow the server's.
   */
  awaitEnd(session: string, call: number, deadline?: number, activation?: Activation): Promise<CallEnd> {
    const end = Promise.withResolvers<CallEnd>();
    end.promise.catch(() => {});
    this.#waitEnd(session, call, deadline, end, activation);
    return end.promise;
  }

  /**
   * Sends a call's `start` and resolves with the call's end, as {@linkcode awaitEnd}
   * would, for a caller that needs nothing in between: one wait from the start to
   * the end. A start that fails rejects it.
   */
  startAndWait(
    frame: RequestFrame<"start">,
    session: string,
    deadline?: number,
    activation?: Activation,
  ): Promise<CallEnd> {
    const end = Promise.withResolvers<CallEnd>();
    const options = deadline === undefined ? {} : { deadline };
    const started = (reply: unknown) => this.#waitEnd(session, (reply as StartReply).call, deadline, end, activation);
    this.#enqueue(frame, options, started, end.reject);
    return end.promise;
  }

  #waitEnd(
    session: string,
    call: number,
    deadline: number | undefined,
    end: EndWait["end"],
    activation: Activation | undefined,
  ): void {
    const early = this.#early.get(session, call);
    if (early) {
      this.#early.delete(session, call);
      if (activation && early.usage) countedElsewhere(activation, early.usage);
      return early.end ? end.resolve(early.end) : end.reject(early.error);
    }
    const wait: EndWait = { end, disarm: undefined, activation };
    if (deadline !== undefined) wait.disarm = this.#giveUpAt(session, call, wait, deadline, "its deadline passed");
    this.#ends.set(session, call, wait);
  }

  /**
   * The caller of a call this client started cancelled it: as after a deadline,
   * `ended` rejects `connection_lost` once the grace has passed without Brain
   * confirming the end, whatever the link or the server does.
   */
  cancelledEnd(session: string, call: number): void {
    const wait = this.#ends.get(session, call);
    if (!wait) return;
    const earlier = wait.disarm;
    const disarm = this.#giveUpAt(session, call, wait, Date.now(), "it was cancelled");
    wait.disarm = () => (earlier?.(), disarm());
  }

  /** Gives the wait for a call's end up, `connection_lost` saying `why`, once the grace after `deadline` passed. */
  #giveUpAt(session: string, call: number, wait: EndWait, deadline: number, why: string): () => void {
    return callAt(this.#graceEnd(deadline), () => {
      if (this.#ends.get(session, call) !== wait) return;
      this.#ends.delete(session, call);
      wait.disarm?.();
      wait.end.reject(
        new BrainError(
          "connection_lost",
          `call ${call} of session ${session}: ${why} and Brain could not confirm its end; its records say how it ended`,
        ),
      );
    });
  }

  /** Registers the handlers of a session handle, so dispatched calls find them, and its Components' uploads. */
  addHandle(
    handle: string,
    session: string,
    tools: readonly PlacedTool[],
    execute: Executor,
    conversation: HandleConversation = {},
    uploads: readonly ComponentUpload[] = [],
  ): void {
    this.#handles.set(handle, {
      session,
      tools: new Map(tools.map((placed) => [placed.tool.name, placed])),
      conversation,
      uploads,
      execute,
    });
  }

  /**
   * Gives the server the bytes of the `uploads` it lacks (`lacking`, then one `upload` each), so a `get`
   * can name them by their hash. A server older than protocol {@linkcode COMPONENTS_REOPENED} reopens no
   * session with uploaded Components: that is `unsupported_runtime`.
   */
  async provide(uploads: readonly ComponentUpload[]): Promise<void> {
    if (uploads.length === 0) return;
    await this.#provide(uploads, (op, body) => this.request(op, body, { retry: true }), () => {
      if (this.#serverProtocol >= COMPONENTS_REOPENED) return;
      throw new BrainError(
        "unsupported_runtime",
        `the Brain server at ${this.#url} speaks protocol ${this.#serverProtocol}: it reopens no session ` +
          `with uploaded Components (protocol ${COMPONENTS_REOPENED} does)`,
      );
    });
  }

  /**
   * Asks the server which of `uploads` it lacks and sends those, one Component per frame, so no frame
   * is larger than the `create` that first carried it; `checked` runs once the server has answered.
   */
  async #provide(uploads: readonly ComponentUpload[], request: Ask, checked = () => {}): Promise<void> {
    const byHash = new Map(uploads.map((upload) => [upload.sha256, upload]));
    const lacking = await request("lacking", { sha256: [...byHash.keys()] });
    checked();
    // One at a time: a single Component's base64 is in memory at once.
    for (const hash of lacking) {
      const upload = byHash.get(hash);
      if (upload) await request("upload", { url: upload.url, sha256: hash, bytes: upload.bytes.toBase64() });
    }
  }

  /**
   * Marks a handle the server has opened: should the server give it up on its own,
   * `watch` is told why, the handle is released and `onEvent` hears `session_closed`;
   * should the server reopen it (after a reconnect), `watch` is told its budgets there.
   */
  watchHandle(handle: string, watch: HandleWatch): void {
    const hosted = this.#handles.get(handle);
    if (!hosted) return;
    hosted.watch = watch;
    // The server gave it up in the batch of frames that opened it.
    if (hosted.gone) this.#tell(this.#giveUp(handle, hosted, hosted.gone));
  }

  /** Releases a handle's handlers. */
  removeHandle(handle: string): void {
    clearTimeout(this.#reopening.get(handle));
    this.#reopening.delete(handle);
    this.#handles.delete(handle);
  }

  /** Follows a session's committed records from `from` on, across reconnects. */
  async *follow(session: string, from = 1, signal?: AbortSignal): AsyncGenerator<JournalRecord> {
    const stream = new RecordStream(session, from);
    this.#followers.add(stream);
    this.#subscribe(stream);
    try {
      yield* stream.records(signal);
    } finally {
      this.#followers.delete(stream);
      for (const [id, subscribed] of this.#streams) {
        if (subscribed !== stream) continue;
        this.#streams.delete(id);
        if (this.#state === "attached") this.request("unsubscribe", { stream: id }).catch(() => {});
      }
    }
  }

  /** Closes the socket for good: pending requests fail with `session_closed`, local calls are aborted. */
  async close(): Promise<void> {
    if (this.#state === "closed") return;
    this.#state = "closed";
    clearTimeout(this.#timer);
    this.#reopening.forEach(clearTimeout);
    this.#reopening.clear();
    clearInterval(this.#pinger);
    this.#abortRunning();
    // A follower ends at close, as an embedded Brain's does: it has yielded every record it could get.
    for (const stream of this.#followers) stream.end();
    this.#failAll(new BrainError("brain_closed", "this Brain is closed"));
    this.#socket?.close(1000, "closed");
    await this.#socketClosed;
  }

  #enqueue(
    frame: Pending["frame"],
    { retry = false, generation, deadline }: RequestOptions,
    resolve: (value: unknown) => void,
    reject: (error: unknown) => void,
  ): number {
    if (this.#state === "closed") {
      reject(new BrainError("brain_closed", "this Brain is closed"));
      return 0;
    }
    if (generation !== undefined && (generation !== this.#generation || this.#state !== "attached")) {
      reject(lost());
      return 0;
    }
    if (this.#state === "waiting" && this.#failure) {
      reject(this.#failure);
      return 0;
    }
    const id = frame.id = this.#nextId++;
    const pending: Pending = {
      frame,
      retry,
      generation,
      sent: false,
      resolve,
      reject,
    };
    this.#pending.set(id, pending);
    if (deadline !== undefined) this.#expire(id, pending, this.#graceEnd(deadline));
    if (this.#state === "attached") this.#send(pending);
    return id;
  }

  /** When the caller stops waiting for Brain about a call with `deadline`: the grace after it, or after now once it passed. */
  #graceEnd(deadline: number): number {
    return Math.max(deadline, Date.now()) + this.#options.deadlineGraceMs;
  }

  /** Fails a request still unanswered at `until`, sent or not. */
  #expire(id: number, pending: Pending, until: number): void {
    const { resolve, reject } = pending;
    const disarm = callAt(until, () => {
      if (this.#pending.get(id) !== pending) return;
      this.#pending.delete(id);
      reject(
        new BrainError(
          "connection_lost",
          pending.sent
            ? "Brain did not answer in time; the request may or may not have run"
            : "the connection to Brain did not come back in time; the request was not sent",
        ),
      );
    });
    pending.resolve = (value) => (disarm(), resolve(value));
    pending.reject = (error) => (disarm(), reject(error));
  }

  #send(pending: Pending): void {
    try {
      this.#write(pending.frame);
    } catch (error) {
      // Too large for the server: refused here, so the one request fails and the socket serves on.
      this.#pending.delete(pending.frame.id);
      pending.reject(error);
      return;
    }
    pending.sent = true;
  }

  #write(frame: ClientFrame): void {
    this.#outbox?.write(frame);
  }

  #subscribe(stream: RecordStream): void {
    const frame = { id: 0, op: "subscribe" as const, session: stream.session, from: stream.next };
    const id = this.#enqueue(frame, {}, () => {}, (error) => {
      if (!(error instanceof BrainError && error.code === "connection_lost" && this.#state !== "waiting")) {
        stream.end(error);
      }
    });
    if (id !== 0) this.#streams.set(id, stream);
  }

  #connect(): void {
    const { token, host, takeover, serverToken } = this.#options;
    const url = this.#url;
    this.#state = "connecting";
    this.#refused = undefined;
    this.#moved = undefined;
    let socket: HostSocket;
    try {
      const endpoint = new URL(HOST_PATH, url.replace(/^http/, "ws"));
      endpoint.searchParams.set("host", host);
      endpoint.searchParams.set("protocol", String(PROTOCOL_VERSION));
      endpoint.searchParams.set("instance", this.#instance);
      if (takeover) endpoint.searchParams.set("takeover", "1");
      // The tokens travel in headers, never in a URL.
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (serverToken !== undefined) headers[SERVER_TOKEN_HEADER] = serverToken;
      socket = new HostSocket(endpoint, headers);
    } catch (error) {
      this.#failure = error instanceof BrainError
        ? error
        : new BrainError("connection_lost", `cannot connect to ${url}: ${(error as Error).message}`);
      this.#retry("failed", this.#failure);
      return;
    }
    this.#socket = socket;
    this.#outbox = new Outbox(socket);
    const closed = Promise.withResolvers<void>();
    this.#socketClosed = closed.promise;
    this.#armHandshake(socket);
    socket.onopen = () => this.#attach(socket);
    socket.onmessage = (event) => this.#receive(socket, event.data);
    socket.onerror = ({ error }) => {
      if (error.code === "unauthorized") {
        this.#refused = new BrainError(
          "unauthorized",
          `the Brain server refused host ${host}: wrong or missing token; a host the server does not know yet ` +
            "registers with new Brain({ url, token, host, serverToken }) or is named in its hostTokens",
        );
      } else if (this.#state === "connecting") {
        this.#refused ??= new BrainError(error.code, `cannot connect to the Brain server at ${url}: ${error.message}`, {
          cause: error,
        });
      }
    };
    socket.onclose = (event) => {
      closed.resolve();
      if (event.code === HOST_IN_USE) this.#refused = new BrainError("host_in_use", event.reason);
      if (event.code === UNAUTHORIZED) this.#refused = new BrainError("unauthorized", event.reason);
      if (event.code === MOVED && isServerUrl(event.reason)) {
        // The tokens would follow in clear text: a server reached over TLS never sends the host off it.
        if (isSecureUrl(url) && !isSecureUrl(event.reason)) {
          this.#refused = new BrainError(
            "connection_failed",
            `the Brain server at ${url} sent this host to ${event.reason}, which is not TLS: not followed`,
          );
        } else this.#moved = event.reason;
      }
      this.#lost(socket);
    };
  }

  /** A handshake into a silent link never ends by itself: the socket is given up after a ping interval of silence. */
  #armHandshake(socket: HostSocket): void {
    if (this.#socket !== socket || this.#state !== "connecting") return;
    const url = this.#url;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      if (this.#socket !== socket || this.#state !== "connecting") return;
      this.#refused = new BrainError("connection_lost", `the Brain server at ${url} did not answer in time`);
      socket.close();
      this.#lost(socket);
    }, this.#options.pingIntervalMs);
  }

  /**
   * Declares the open handles on a socket that just opened. A server that reopens Components
   * gets the bytes it lacks first, so the `attach` names each by its hash alone.
   */
  #attach(socket: HostSocket): void {
    this.#serverProtocol = socket.protocol;
    const uploads = this.#serverProtocol >= COMPONENTS_REOPENED
      ? [...this.#handles.values()].flatMap((hosted) => hosted.uploads)
      : [];
    if (uploads.length === 0) return this.#declare(socket);
    const request: Ask = (op, body) =>
      new Promise((resolve, reject) =>
        this.#handshake(socket, { id: 0, op, ...body } as RequestFrame<typeof op>, resolve as Answered, reject)
      );
    // A server that refused an upload fails the handles that need it, in the attach's reply.
    this.#provide(uploads, request).catch(() => {}).finally(() => {
      if (this.#socket === socket && this.#state === "connecting") this.#declare(socket);
    });
  }

  #declare(socket: HostSocket): void {
    const handles = [...this.#handles].map(([handle, hosted]) => this.#declared(handle, hosted));
    this.#handshake(socket, { id: 0, op: "attach", handles }, (value) => {
      const { maxFrameBytes, failed, opened } = value as Partial<Replies["attach"]>;
      this.#outbox?.limit(maxFrameBytes);
      this.#attached(socket, Array.isArray(failed) ? failed : [], Array.isArray(opened) ? opened : []);
    }, (error) => {
      if (this.#socket !== socket) return;
      this.#refused = error instanceof BrainError ? error : lost();
      socket.close(1000, "attach refused");
      this.#lost(socket);
    });
  }

  /**
   * Sends a request on a socket that is not attached yet (the `attach`, and the uploads before it).
   * `answered` takes its reply's value as the reply is read, before the frames after it;
   * `failed` its error, or the loss of the socket.
   */
  #handshake(
    socket: HostSocket,
    frame: RequestFrame<"attach" | "lacking" | "upload">,
    answered: Answered,
    failed: (error: unknown) => void,
  ): void {
    const id = frame.id = this.#nextId++;
    this.#pending.set(id, {
      frame,
      retry: false,
      generation: undefined,
      sent: true,
      resolve: (value) => {
        // The server is answering: the handshake's deadline starts again.
        this.#armHandshake(socket);
        answered(value);
      },
      reject: failed,
    });
    this.#write(frame);
  }

  /** A handle as this client declares it to the server: its session, the Tools it hosts and its conversation. */
  #declared(handle: string, { session, tools, conversation, uploads }: HostedHandle) {
    const named = this.#serverProtocol >= COMPONENTS_REOPENED && uploads.length > 0;
    return {
      handle,
      session,
      ...(tools.size > 0 ? { tools: [...tools.values()].map((placed) => placed.advertised) } : {}),
      ...(named ? { uploads: uploads.map((upload) => wireUpload(upload, false)) } : {}),
      ...conversation,
    };
  }

  #attached(
    socket: HostSocket,
    failed: Replies["attach"]["failed"],
    opened: NonNullable<Replies["attach"]["opened"]>,
  ): void {
    if (this.#socket !== socket || this.#state !== "connecting") return;
    clearTimeout(this.#timer);
    this.#state = "attached";
    this.#generation++;
    this.#attempt = 0;
    this.#failure = undefined;
    this.#heard = true;
    this.#pinger = setInterval(() => this.#ping(socket), this.#options.pingIntervalMs);
    for (const { handle, budgets } of opened) this.#handles.get(handle)?.watch?.reopened(budgets);
    const closed = failed.flatMap(({ handle, error }) => this.#notReopened(handle, errorFromWire(error), 0));
    for (const pending of this.#pending.values()) if (!pending.sent) this.#send(pending);
    if (this.#generation > 1) this.#askForEnds();
    const subscribed = new Set(this.#streams.values());
    for (const stream of this.#followers) if (!subscribed.has(stream)) this.#subscribe(stream);
    this.#tell({ type: "attached", url: this.#url });
    for (const event of closed) this.#tell(event);
  }

  /**
   * The server could not reopen an open handle (`why`). A failure that may pass (the
   * store, a lease, a limit) is asked again after a backoff; any other ends the
   * handle: it is released, requests for it that wait to be sent fail, and its
   * session is told. Returns the event to tell.
   */
  #notReopened(handle: string, why: BrainError, attempt: number): HostConnectionEvent[] {
    const hosted = this.#handles.get(handle);
    // A handle still being opened is not given up: its create or get request answers with why.
    if (!hosted?.watch || this.#state === "closed") return [];
    if (PASSING.has(why.code)) {
      this.#reopenLater(handle, hosted, attempt);
      return [];
    }
    return [this.#giveUp(handle, hosted, why, "was not reopened by")];
  }

  /**
   * The server ended an open handle on its own while connected (`gone`): after the
   * ends of its calls, which it pushed first. A handle whose `create` or `get` reply
   * is not yet read is given up once it is watched.
   */
  #gone(frame: Extract<ServerFrame, { t: "gone" }>): void {
    const hosted = this.#handles.get(frame.handle);
    if (!hosted || this.#state === "closed") return;
    const why = errorFromWire(frame.error);
    if (hosted.watch) this.#tell(this.#giveUp(frame.handle, hosted, why));
    else hosted.gone = why;
  }

  /**
   * Ends a handle the server gave up for `why`: it is released, requests for it
   * that wait to be sent fail `session_closed`, and its session is told. Returns the event to tell.
   */
  #giveUp(handle: string, hosted: HostedHandle, why: BrainError, what = "was given up by"): HostConnectionEvent {
    this.#handles.delete(handle);
    clearTimeout(this.#reopening.get(handle));
    this.#reopening.delete(handle);
    const error = new BrainError(
      "session_closed",
      `session ${hosted.session} ${what} the Brain server at ${this.#url}: ${why.message}`,
      { cause: why },
    );
    for (const [id, pending] of this.#pending) {
      if (pending.sent || !("handle" in pending.frame) || pending.frame.handle !== handle) continue;
      this.#pending.delete(id);
      pending.reject(error);
    }
    hosted.watch?.closed(error);
    return { type: "session_closed", url: this.#url, session: hosted.session, error };
  }

  /** Asks the server to reopen `handle` after a backoff, until it does, gives it up for good, or the client closes. */
  #reopenLater(handle: string, hosted: HostedHandle, attempt: number): void {
    const { minDelay, maxDelay } = this.#options;
    clearTimeout(this.#reopening.get(handle));
    this.#reopening.set(
      handle,
      setTimeout(() => {
        this.#reopening.delete(handle);
        if (this.#handles.get(handle) !== hosted) return;
        this.request("get", this.#declared(handle, hosted), { retry: true }).then((budgets) => {
          if (this.#handles.get(handle) === hosted) hosted.watch?.reopened(budgets);
        }, (error) => {
          // A lost or refused connection is not the handle's: the next attach declares it again.
          if (!(error instanceof BrainError) || CONNECTION_FAILURES.has(error.code)) return;
          for (const event of this.#notReopened(handle, error, attempt + 1)) this.#tell(event);
        });
      }, Math.min(maxDelay, minDelay * 2 ** attempt)),
    );
  }

  /**
   * Tells the application's `onEvent`. A callback that throws is reported as an
   * event listener's error is (`reportError`), and changes nothing here: the
   * connection goes on attaching, serving and reconnecting.
   */
  #tell(event: HostConnectionEvent): void {
    try {
      this.#options.onEvent?.(event);
    } catch (error) {
      reportError(error);
    }
  }

  #ping(socket: HostSocket): void {
    if (this.#heard) {
      this.#heard = false;
      this.#write({ op: "ping" });
      return;
    }
    // Nothing came back within a whole interval: the link is gone, whether or not a FIN ever arrives.
    this.#refused = new BrainError("connection_lost", "the Brain server stopped answering pings");
    socket.close(4008, "no answer to ping");
    this.#lost(socket);
  }

  #receive(socket: HostSocket, data: unknown): void {
    if (this.#socket !== socket) return;
    this.#heard = true;
    for (const frame of decodeServerFrames(data)) this.#apply(frame);
  }

  #apply(frame: ServerFrame | Malformed): void {
    if (isMalformed(frame)) return this.#malformed(frame);
    switch (frame.t) {
      case "reply":
        return this.#reply(frame);
      case "invoke":
        return this.#invoke(frame.handle, frame);
      case "abort":
        // Brain ended the call: its Tool may still report (late), but nothing here need abort it again.
        this.#running.get(frame.session, frame.call)?.abort(endedReason(frame.cause));
        this.#running.delete(frame.session, frame.call);
        return;
      case "ended":
        return this.#ended(frame);
      case "gone":
        return this.#gone(frame);
      case "record":
        this.#streams.get(frame.stream)?.push(frame.record);
        return;
      case "closed":
        this.#streams.get(frame.stream)?.end(frame.error && errorFromWire(frame.error));
        this.#streams.delete(frame.stream);
        return;
      case "ping":
        return this.#write({ op: "pong" });
      case "parse":
        return void this.#parse(frame);
      case "telemetry":
        return this.#telemetry(frame);
      case "pong":
        return;
    }
  }

  #reply(frame: Extract<ServerFrame, { t: "reply" }>): void {
    const pending = this.#pending.get(frame.id);
    if (!pending) return;
    this.#pending.delete(frame.id);
    const request = pending.frame;
    if (frame.usage && "call" in request) this.#counted(request.session, request.call, frame.usage);
    if (frame.error) return pending.reject(errorFromWire(frame.error));
    const refused = refusedReply(request.op, frame.value ?? null);
    if (refused !== undefined) {
      return pending.reject(new BrainError("protocol_error", `Brain sent a malformed reply: ${refused}`));
    }
    if (request.op === "start" && (frame.value as StartReply).run) {
      // The invoke traveled with the reply: this client hosts the call it just started.
      const { handle, tool, input, deadline } = request;
      const { call, traceparent } = frame.value as StartReply;
      const session = this.#handles.get(handle)?.session;
      if (session !== undefined) this.#invoke(handle, { session, call, tool, input, deadline, traceparent });
    }
    pending.resolve(frame.value ?? null);
  }

  #ended(frame: Extract<ServerFrame, { t: "ended" }>): void {
    const { session, call, end, usage } = frame;
    if (frame.id !== undefined && end) {
      const pending = this.#pending.get(frame.id);
      this.#pending.delete(frame.id);
      pending?.resolve({ sequence: end.sequence, late: frame.late ?? false } satisfies Replies["finish"]);
    }
    const error = end ? undefined : errorFromWire(frame.error!);
    const wait = this.#ends.get(session, call);
    if (!wait) {
      // Only this client's own calls end here, and their caller asks right after the start reply: kept until then.
      if (this.#early.size >= EARLY_ENDS_KEPT) this.#early = new CallMap();
      this.#early.set(session, call, { end, error, usage });
      return;
    }
    this.#ends.delete(session, call);
    wait.disarm?.();
    if (wait.activation && usage) countedElsewhere(wait.activation, usage);
    if (end) wait.end.resolve(end);
    else wait.end.reject(error);
  }

  /** A report's reply carried what the activation named for its call has spent: its caller's activation follows. */
  #counted(session: string, call: number, usage: Usage): void {
    const activation = this.#ends.get(session, call)?.activation;
    if (activation) countedElsewhere(activation, usage);
  }

  /** A frame that is not one ends only what it names: the request it answers, or the call it dispatches. */
  #malformed({ id, session, call, kind, message }: Malformed): void {
    const error = new BrainError("protocol_error", `Brain sent a malformed frame: ${message}`);
    const pending = id === undefined ? undefined : this.#pending.get(id);
    if ((kind === "reply" || kind === "ended") && pending) {
      this.#pending.delete(id!);
      pending.reject(error);
    }
    if (kind === "ended" && session !== undefined && call !== undefined) {
      // A call's end that cannot be read ends the wait for it: no later frame would.
      const wait = this.#ends.get(session, call);
      this.#ends.delete(session, call);
      wait?.disarm?.();
      wait?.end.reject(error);
    } else if (kind === "invoke" && session !== undefined && call !== undefined) {
      const outcome = fail("protocol_error", error.message);
      this.requestFrame({ id: 0, op: "finish", session, call, outcome, cause: "error" }, {
        generation: this.#generation,
      })
        .catch(() => {});
    }
  }

  #invoke(handle: string, call: Omit<Extract<ServerFrame, { t: "invoke" }>, "t" | "handle">): void {
    const { session, call: sequence, tool, input, deadline, traceparent } = call;
    // A call is sent at most once: its first dispatch reports its end, a replay is dropped.
    const key = `${session}#${sequence}`;
    if (this.#invoked.has(key)) return;
    this.#invoked.add(key);
    // Raced, as a call's own signal is embedded: the Tool's reports race it with no event listener each.
    const controller = new RacedAbortController();
    const trace = traceHostedRun({ sessionId: session, sequence, tool }, traceparent, controller.signal);
    this.#running.set(session, sequence, controller);
    const generation = { generation: this.#generation };
    const report: Report = (frame) => this.requestFrame(frame, generation);
    const sink = new RemoteSink({
      report,
      session,
      call: sequence,
      controller,
      done: () => {
        trace?.end();
        if (this.#running.get(session, sequence) === controller) this.#running.delete(session, sequence);
      },
    });
    const hosted = this.#handles.get(handle);
    const placed = hosted?.session === session ? hosted.tools.get(tool) : undefined;
    if (!hosted || !placed) {
      sink.finish({ outcome: fail("unknown_tool", `this host holds no handler for ${tool}`) }, "error")
        .catch(() => {});
      return;
    }
    within(trace, () => hosted.execute(placed, { sessionId: session, sequence, tool, input, deadline }, sink));
  }

  /** Hands an uploaded Component's telemetry entry to the listener its `component(url, { telemetry })` was given. */
  #telemetry({ handle, entry }: Extract<ServerFrame, { t: "telemetry" }>): void {
    const implementation = this.#handles.get(handle)?.tools.get(entry.tool)?.implementation;
    if (!(implementation instanceof Component)) return;
    try {
      telemetryListener(implementation)?.(entry);
    } catch {
      // Telemetry is best-effort: a failing listener never affects the connection.
    }
  }

  /** Parses a value an uploaded Component takes or gives with this application's own Zod schema for it. */
  async #parse({ ask, handle, tool, io, value }: Extract<ServerFrame, { t: "parse" }>): Promise<void> {
    const declaration = this.#handles.get(handle)?.tools.get(tool)?.tool;
    const schema = io === "input" ? declaration?.input : declaration?.output;
    let answer: NoticeOf<"parsed">;
    try {
      if (!schema) throw new Error(`this host holds no ${io} schema for ${tool}`);
      const parsed = await schema.safeParseAsync(value);
      const nonJson = parsed.success ? findNonJson(parsed.data) : undefined;
      answer = !parsed.success
        ? { op: "parsed", ask, error: issuesJson(parsed.error) }
        : nonJson
        ? { op: "parsed", ask, error: [{ path: [], message: `the parsed ${io} is not JSON: ${nonJson}` }] }
        : { op: "parsed", ask, value: parsed.data as JsonValue };
    } catch (error) {
      answer = {
        op: "parsed",
        ask,
        error: [{ path: [], message: `${io} validation threw: ${errorText(error)}` }],
      };
    }
    try {
      this.#write(answer);
    } catch (error) {
      // A parsed value too large for the server's frames: an answer still, so the call it belongs to goes on.
      this.#write({ op: "parsed", ask, error: [{ path: [], message: `the parsed ${io} ${errorText(error)}` }] });
    }
  }

  #askForEnds(): void {
    for (const [session, call, wait] of this.#ends.entries()) {
      this.request("wait", { session, call }, { retry: true }).then(
        (end) => {
          if (!end || this.#ends.get(session, call) !== wait) return;
          this.#ends.delete(session, call);
          wait.disarm?.();
          wait.end.resolve(end);
        },
        (error) => {
          if (this.#ends.get(session, call) !== wait) return;
          this.#ends.delete(session, call);
          wait.disarm?.();
          wait.end.reject(error);
        },
      );
    }
  }

  /** The socket is gone: an attached link was lost, or an attempt to connect failed. Retries either way. */
  #lost(socket: HostSocket): void {
    if (this.#socket !== socket) return;
    this.#socket = undefined;
    this.#outbox = undefined;
    clearInterval(this.#pinger);
    clearTimeout(this.#timer);
    if (this.#state === "closed") return;
    const attached = this.#state === "attached";
    const moved = this.#moved;
    this.#abortRunning();
    this.#streams.clear();
    // Sent requests that are not idempotent may or may not have run; the rest wait for the next server.
    if (attached || moved !== undefined) {
      for (const [id, pending] of this.#pending) {
        if (pending.sent && pending.retry) pending.sent = false;
        else if (pending.sent || pending.generation !== undefined) {
          this.#pending.delete(id);
          pending.reject(lost());
        }
      }
      if (moved !== undefined) {
        this.#failure = undefined;
        this.#retry("moved", undefined, moved);
      } else this.#retry("lost", this.#refused ?? lost());
      return;
    }
    // The attempt failed. A refusal, or a server never reached, fails every request with why;
    // during an outage of a server that once answered, idempotent requests wait for the next attempt.
    // The ends of started calls and followed records always wait for it.
    const failure = this.#refused ?? new BrainError("connection_lost", `cannot connect to ${this.#url}`);
    const outage = this.#generation > 0 && failure.code === "connection_lost";
    this.#failure = outage ? undefined : failure;
    for (const [id, pending] of this.#pending) {
      if (outage && pending.retry) continue;
      this.#pending.delete(id);
      pending.reject(failure);
    }
    this.#retry("failed", failure);
  }

  /**
   * Connects again after a delay: to `to` when a server sent the host there
   * (at once the first time), else to the next server of the cluster, backing off.
   */
  #retry(type: "lost" | "failed" | "moved", error: BrainError | undefined, to?: string): void {
    const url = this.#url;
    this.#state = "waiting";
    if (to === undefined) this.#at = (this.#at + 1) % this.#urls.length;
    else {
      if (!this.#urls.includes(to)) this.#urls.push(to);
      this.#at = this.#urls.indexOf(to);
    }
    const { minDelay, maxDelay } = this.#options;
    const backoff = Math.min(maxDelay, minDelay * 2 ** this.#attempt++) * (0.5 + Math.random() / 2);
    const retryInMs = to !== undefined && this.#attempt === 1 ? 0 : Math.round(backoff);
    this.#timer = setTimeout(() => this.#connect(), retryInMs);
    this.#tell({
      type,
      url,
      retryInMs,
      ...(error === undefined ? {} : { error }),
      ...(to === undefined ? {} : { to }),
    });
  }

  /** Fails every request, end and follower. */
  #failAll(error: BrainError): void {
    for (const wait of this.#ends.values()) {
      wait.disarm?.();
      wait.end.reject(error);
    }
    this.#ends.clear();
    this.#early = new CallMap();
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
    for (const stream of this.#streams.values()) stream.end(error);
    for (const stream of this.#followers) stream.end(error);
    this.#streams.clear();
  }

  #abortRunning(): void {
    for (const controller of this.#running.values()) controller.abort(endedReason("unknown"));
    this.#running.clear();
  }
}

/** True for a server's base URL: http(s) or ws(s), nothing else. */
export function isServerUrl(text: string): boolean {
  try {
    return /^(https?|wss?):$/.test(new URL(text).protocol);
  } catch {
    return false;
  }
}

/** True for an `https:` or `wss:` URL. */
function isSecureUrl(text: string): boolean {
  try {
    return /^(https|wss):$/.test(new URL(text).protocol);
  } catch {
    return false;
  }
}

/** Why a server may fail to reopen a handle for a while: its store, a lease another server holds, a limit. */
const PASSING = new Set<string>(["storage_unavailable", "storage_full", "session_owned", "limit_exceeded", "fenced"]);

/** Failures of the connection rather than of one request. */
const CONNECTION_FAILURES = new Set<string>([
  "connection_lost",
  "connection_failed",
  "unauthorized",
  "host_in_use",
  "brain_closed",
]);

/** Takes a reply's value. */
type Answered = (value: unknown) => void;

/** Sends a request of the Component upload exchange and resolves with its reply's value. */
type Ask = <O extends "lacking" | "upload">(op: O, body: Omit<RequestOf<O>, "op">) => Promise<Replies[O]>;

/** Ends pushed ahead of their caller kept at most; past it they are dropped (a caller that never asked). */
const EARLY_ENDS_KEPT = 1024;
/** Calls a client remembers it was sent to run; a server replays one only soon after, if at all. */
const INVOKED_KEPT = 4_096;

/** Close code of a socket whose host's registration does not match (a concurrent registration won). */
const UNAUTHORIZED = 4003;

function lost(): BrainError {
  return new BrainError("connection_lost", "the connection to Brain was lost; the request may or may not have run");
}
