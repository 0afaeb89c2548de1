import { checkOwner, type EmbeddedBackend, ownedBy } from "../../embedded/embedded.ts";
import type { Journal } from "../../journal/journal.ts";
import type { AdvertisedTool, JournalRecord, SessionMeta } from "../../journal/records.ts";
import { BrainError } from "../../outcome/errors.ts";
import { fail, type Outcome } from "../../outcome/outcome.ts";
import type { PublishedResult } from "../../contract/call.ts";
import type { CallEnd } from "../../session/call_state.ts";
import type { PlacedTool } from "../../contract/placement.ts";
import { Activation } from "../../session/activation.ts";
import type { Session } from "../../session/session.ts";
import { noSession } from "../../session/no_session.ts";
import type { ToolCall } from "../../session/handle.ts";
import type { AgentloopOptions } from "../../agentloop/agentloop.ts";
import {
  type Budgets,
  type ClientFrame,
  COMPONENTS_REOPENED,
  decodeClientFrames,
  errorFrame,
  isMalformed,
  type Malformed,
  MOVED,
  type NoticeOf,
  oversizeFrame,
  type Replies,
  type RequestOf,
  type RequestOp,
  type ServerFrame,
  type Usage,
  type WireAgentloop,
  type WireError,
  type WireUpload,
} from "../protocol.ts";
import { outboxOf, type ParsedValue, type RegisteredHost, send } from "./registry.ts";
import type { JsonValue } from "../../outcome/json.ts";
import { remoteTool } from "./remote_tool.ts";
import { uploadedTool } from "./uploaded_tool.ts";
import type { TelemetryEntry } from "../../component/sandbox.ts";
import { CallMap } from "../call_map.ts";
import type { ClusterNode } from "./cluster_node.ts";

/** How many ended calls the server keeps, so a later cancel of one is recorded late, as embedded. */
const ENDED_KEPT = 256;

/** Calls started through the server, by session and sequence, until they end and a while after. */
export class OpenCalls {
  #calls = new CallMap<ToolCall>();
  #ended: [session: string, sequence: number][] = [];

  /** Keeps `call` until {@linkcode ended} and {@linkcode ENDED_KEPT} later calls have ended. */
  track(session: string, call: ToolCall): void {
    this.#calls.set(session, call.sequence, call);
  }

  /** Notes that a tracked call ended (or its end could not commit here). */
  ended(session: string, sequence: number): void {
    this.#ended.push([session, sequence]);
    if (this.#ended.length <= ENDED_KEPT) return;
    const [oldestSession, oldest] = this.#ended.shift()!;
    this.#calls.delete(oldestSession, oldest);
  }

  /** The call, if it was started here and has not ended or ended recently. */
  get(session: string, sequence: number): ToolCall | undefined {
    return this.#calls.get(session, sequence);
  }
}

/**
 * A call started on this socket whose `ended` push is still to be sent; `finishing` while its finish answers it,
 * and the activation the client named for it, whose usage its frames carry.
 */
interface Started {
  call: ToolCall;
  finishing: boolean;
  activation: Activation | undefined;
}

/** What one host socket needs from its Brain server. */
export interface LinkParts {
  socket: WebSocket;
  host: RegisteredHost;
  backend: EmbeddedBackend;
  calls: OpenCalls;
  /** This server's place in its cluster: where the owners of other servers' sessions serve. */
  cluster: ClusterNode;
  /** The largest frame read; a larger one is answered `payload_too_large` unparsed. */
  maxFrameBytes: number;
  /** Bytes sent and still unread past which the host is taken as gone. */
  maxUnreadBytes: number;
  /** How often Brain pings a host it has not heard from; the link is lost after one unanswered ping. */
  pingIntervalMs: number;
  /** The protocol version the client speaks ({@linkcode protocolVersion}). */
  protocol: number;
}

/** How long past a lease a reattaching host waits for the Brain that held it. */
const LEASE_GRACE_MS = 1_000;

/** A reply already sent another way (the `ended` push that answers a finish). */
const ANSWERED = Symbol("answered");

type Handlers = {
  [O in RequestOp]: (frame: Extract<ClientFrame, { op: O; id: number }>) => Promise<Replies[O] | typeof ANSWERED>;
};
type Conversation = { model?: string; agentloop?: WireAgentloop };
/** A handle as a `get` or `attach` declares it: the Tools it hosts, the uploads of its Components, its conversation. */
type Declared = Conversation & { tools?: AdvertisedTool[]; uploads?: WireUpload[] };

/**
 * Serves one host socket: the session API, the calls this client starts, and
 * the reports of calls dispatched to it. Reports are applied to their call in
 * arrival order, synchronously, so the journal sees them in the order the host
 * made them. A frame that fails to parse ends only what it names: its request
 * gets a `protocol_error` reply and its call ends with an `error` outcome.
 */
export class HostSocketHandler {
  #socket: WebSocket;
  #host: RegisteredHost;
  #backend: EmbeddedBackend;
  #journal: Journal;
  #calls: OpenCalls;
  #cluster: ClusterNode;
  #registration: { id: string; tokenHash: string };
  #streams = new Map<number, AbortController>();
  /** `wait` requests following the journal for a call's end. */
  #waits = 0;
  #closed = new AbortController();
  /** Calls started on this socket whose `ended` push is still to be sent. */
  #started = new CallMap<Started>();
  #heard = true;
  #pinger: ReturnType<typeof setInterval>;
  #maxFrameBytes: number;
  #protocol: number;
  #gone = Promise.withResolvers<void>();

  constructor(
    { socket, host, backend, calls, cluster, pingIntervalMs, maxFrameBytes, maxUnreadBytes, protocol }: LinkParts,
  ) {
    this.#cluster = cluster;
    this.#protocol = protocol;
    this.#maxFrameBytes = maxFrameBytes;
    this.#socket = socket;
    this.#host = host;
    this.#backend = backend;
    this.#journal = backend.journal;
    this.#calls = calls;
    this.#registration = { id: host.id, tokenHash: host.tokenHash };
    socket.onmessage = (event) => this.#receive(event.data);
    socket.onclose = () => {
      this.#lost();
      this.#gone.resolve();
    };
    this.#pinger = setInterval(() => this.#ping(), pingIntervalMs);
    // A host that does not read is gone at once: its close frame may never be read, so no close event would say so.
    outboxOf(socket).stallAt(maxUnreadBytes, () => this.#lost());
  }

  /** Resolves once the socket has closed. */
  get closed(): Promise<void> {
    return this.#gone.promise;
  }

  #handlers: Handlers = {
    // Sessions
    attach: (frame) => this.#attach(frame),
    create: (frame) => this.#create(frame),
    get: async (frame) => {
      await this.#follow(frame);
      await this.#open(frame.handle, frame.session, frame, frame.waitMs);
      return budgets(this.#handle(frame.handle));
    },
    lacking: (frame) => Promise.resolve(this.#host.components.lacking(frame.sha256)),
    upload: async (frame) => (await this.#host.components.add(frame), null),
    delete: (frame) => this.#delete(frame.session),
    list: () => this.#list(),
    end: async (frame) => (await this.#endHandle(frame.handle), null),
    // Conversation: the Agentloop runs here; the reply waits for the activation that answers the message.
    send: async (frame) => this.#shown([await this.#handle(frame.handle).send(frame.content)])[0],
    interrupt: (frame) => (this.#handle(frame.handle).interrupt(), Promise.resolve(null)),
    // Calls this client starts
    start: (frame) => this.#start(frame),
    wait: (frame) => this.#wait(frame.session, frame.call),
    cancel: (frame) => this.#cancel(frame.session, frame.call, frame.message),
    // Records
    read: async (frame) => {
      await this.#owned(frame.session);
      return this.#shown(await this.#journal.read(frame.session, frame));
    },
    subscribe: (frame) => this.#subscribe(frame.id, frame.session, frame.from),
    unsubscribe: (frame) => (this.#streams.get(frame.stream)?.abort(), Promise.resolve(null)),
    // Reports of calls dispatched to this host
    emit: (frame) => this.#host.sink(frame.session, frame.call).emit(frame.event, frame.data),
    // The call's own scope: its activation's budget, its identity as origin, its end stops the request.
    model: (frame) => this.#host.sink(frame.session, frame.call).model(frame.request),
    result: (frame) => {
      const sink = this.#host.sink(frame.session, frame.call);
      if (frame.outcome.status !== "ok") this.#host.endedByHost(frame.session, frame.call);
      return sink.emitResult(published(frame)!);
    },
    returned: (frame) => {
      const sink = this.#host.sink(frame.session, frame.call);
      if (frame.outcome && frame.outcome.status !== "ok") this.#host.endedByHost(frame.session, frame.call);
      return sink.returned(published(frame)).then(() => null);
    },
    finish: (frame) => this.#finish(frame),
    record: async (frame) => this.#shown(await this.#record(frame.session, frame.call, frame.records)),
  };

  // -- frames ------------------------------------------------------------------------------------

  #receive(data: unknown): void {
    // A socket being closed serves nothing more: its replies would be dropped, and its host is gone or going.
    if (this.#socket.readyState !== WebSocket.OPEN) return;
    this.#heard = true;
    const oversize = oversizeFrame(data, this.#maxFrameBytes);
    if (oversize) {
      if (oversize.id === undefined) this.#socket.close(1009, "frame too large");
      else send(this.#socket, { t: "reply", id: oversize.id, error: errorFrame(oversize.error) });
      return;
    }
    for (const frame of decodeClientFrames(data)) this.#apply(frame);
  }

  #apply(frame: ClientFrame | Malformed): void {
    if (isMalformed(frame)) return this.#malformed(frame);
    if (frame.op === "ping") return send(this.#socket, { t: "pong" });
    if (frame.op === "pong") return;
    if (frame.op === "parsed") return this.#host.parsed(frame.ask, parsedValue(frame));
    const handler = this.#handlers[frame.op] as (frame: ClientFrame) => Promise<unknown>;
    let reply: Promise<unknown>;
    try {
      reply = handler(this.#scoped(frame));
    } catch (error) {
      reply = Promise.reject(error);
    }
    const id = frame.id;
    reply.then(
      (value) => {
        if (value === ANSWERED) return;
        const usage = "call" in frame && reports.has(frame.op) ? this.#usage(frame.session, frame.call) : undefined;
        send(
          this.#socket,
          usage ? { t: "reply", id, value: value ?? null, usage } : { t: "reply", id, value: value ?? null },
        );
      },
      (error) => send(this.#socket, { t: "reply", id, error: this.#host.shownError(errorFrame(error)) }),
    );
  }

  /**
   * `frame` with the session ids it names turned into this host's journal keys: a host
   * names its own sessions, and cannot name another host's. A session id that is not a
   * name throws `invalid_argument`.
   */
  #scoped<F extends ClientFrame>(frame: F): F {
    // The frame was parsed for this handler alone: it is scoped where it is.
    if ("session" in frame) return (frame.session = this.#host.sessionKey(frame.session), frame);
    if (frame.op !== "attach") return frame;
    const handles = frame.handles.map((open) => ({ ...open, session: this.#host.sessionKey(open.session) }));
    return { ...frame, handles };
  }

  /** A frame that is not one: its request is answered `protocol_error`, and the call it reports on ends `error`. */
  #malformed({ id, session: named, call, kind, message }: Malformed): void {
    const error = new BrainError("protocol_error", message);
    if (named !== undefined && call !== undefined && isReport(kind)) {
      let sink;
      let session = named;
      try {
        session = this.#host.sessionKey(named);
        sink = this.#host.sink(session, call);
      } catch {
        sink = undefined;
      }
      if (sink) {
        this.#host.endedByHost(session, call);
        sink.finish({ outcome: fail("protocol_error", `the host sent a malformed ${kind}: ${message}`) }, "error")
          .catch(() => {});
      }
    }
    if (id !== undefined) send(this.#socket, { t: "reply", id, error: errorFrame(error) });
  }

  #ping(): void {
    if (this.#heard) {
      this.#heard = false;
      send(this.#socket, { t: "ping" });
      return;
    }
    // Nothing came back within a whole interval: the link is gone, whether or not a FIN ever arrives.
    this.#lost();
    this.#socket.close(4008, "no answer to ping");
  }

  #lost(): void {
    clearInterval(this.#pinger);
    this.#closed.abort();
    for (const controller of this.#streams.values()) controller.abort();
    this.#host.detach(this.#socket);
  }

  // -- sessions ----------------------------------------------------------------------------------

  async #attach(frame: RequestOf<"attach">): Promise<Replies["attach"]> {
    for (const declared of frame.handles) await this.#follow(declared);
    const declared = new Set(frame.handles.map((declared) => declared.handle));
    await Promise.allSettled([...this.#host.handles.keys()].filter((id) => !declared.has(id)).map(this.#endHandle));
    const failed: Replies["attach"]["failed"] = [];
    const opened: NonNullable<Replies["attach"]["opened"]> = [];
    for (const declared of frame.handles) {
      const id = declared.handle;
      await this.#open(id, declared.session, declared).then(
        () => opened.push({ handle: id, budgets: budgets(this.#handle(id)) }),
        (error) => failed.push({ handle: id, error: this.#host.shownError(errorFrame(error)) }),
      );
    }
    return opened.length > 0
      ? { failed, opened, maxFrameBytes: this.#maxFrameBytes }
      : { failed, maxFrameBytes: this.#maxFrameBytes };
  }

  async #create(frame: RequestOf<"create">): Promise<Budgets> {
    // A handle names one open session; reusing it would orphan that session past every handle limit.
    if (this.#host.handles.has(frame.handle)) {
      throw new BrainError("invalid_argument", `session handle ${frame.handle} is already open`);
    }
    const tools = await this.#placed(frame.handle, frame.tools, frame.uploads);
    this.#host.checkHandleRoom();
    const session = await this.#host.createSession(
      (counted) => this.#backend.create({ id: frame.session, tools, ...served(frame) }, this.#registration, counted),
    );
    await this.#keep(frame.handle, session);
    return budgets(session);
  }

  /**
   * Opens handle `id` on `session` with the Tools it declares, unless it is open here already. An uploaded
   * Component is placed again from the upload the handle names (protocol 3); reopening checks the Tools are
   * the session's own, that Component's bytes included.
   */
  async #open(
    id: string,
    session: string,
    { tools = [], uploads = [], ...conversation }: Declared,
    waitMs = this.#backend.leaseMs + LEASE_GRACE_MS,
  ) {
    const meta = await this.#owned(session);
    if (!this.#host.handles.has(id)) {
      const named = new Set(uploads.map((upload) => upload.tool));
      const unnamed = tools.find((tool) => tool.implementation === "component" && !named.has(tool.name));
      if (unnamed) {
        throw new BrainError(
          "unsupported_runtime",
          `session ${session}: tool ${unnamed.name} is an uploaded Component, and the client named no upload of it: ` +
            `a client of protocol ${COMPONENTS_REOPENED} or later reopens a session with uploaded Components`,
        );
      }
      this.#host.checkHandleRoom();
      const placed = await this.#placed(id, tools, uploads);
      const opened = await this.#backend.get(
        session,
        { tools: placed, ...served(conversation), waitMs },
        this.#registration,
      );
      await this.#keep(id, opened);
    }
    return meta;
  }

  /**
   * The Tools a handle declares, placed here: an application Tool runs on this host, an uploaded Component
   * in this server's sandboxes, from the upload of it the handle names (`protocol_error` without one).
   */
  #placed(handle: string, tools: AdvertisedTool[], uploads: WireUpload[] = []): Promise<PlacedTool[]> {
    const byTool = new Map(uploads.map((upload) => [upload.tool, upload]));
    return Promise.all(tools.map(async (tool) => {
      if (tool.implementation !== "component") return remoteTool(this.#host, handle, tool);
      const upload = byTool.get(tool.name);
      if (!upload) throw new BrainError("protocol_error", `tool ${tool.name}: a Component placement needs its upload`);
      const parse = (io: "input" | "output", value: JsonValue) => this.#host.parse(handle, tool.name, io, value);
      const telemetry = (entry: TelemetryEntry) => this.#host.telemetry(handle, entry);
      return uploadedTool(tool, upload, await this.#host.components.component(upload), parse, telemetry);
    }));
  }

  /** Keeps `session` as handle `id`; when it cannot be kept (the id taken, no room left), ends it and throws why. */
  async #keep(id: string, session: Session): Promise<void> {
    try {
      this.#host.keep(id, session);
    } catch (error) {
      await session.end();
      throw error;
    }
  }

  /**
   * Sends the host to the server that owns `session`, when another live one
   * does and the host opens a new handle that would write to it: this server ends the host's handles here (releasing their sessions for
   * the owner to take) and closes the socket with {@linkcode MOVED} and the
   * owner's URL. The request that asked is not answered here; the client resends
   * it there.
   */
  async #follow(
    { handle, session, tools, model }: { handle: string; session: string; tools?: unknown[]; model?: string },
  ): Promise<void> {
    if (this.#host.handles.has(handle) || !(tools?.length || model !== undefined)) return;
    const url = await this.#cluster.ownerUrl(session);
    if (url === undefined) return;
    await Promise.allSettled([...this.#host.handles.keys()].map(this.#endHandle));
    this.#socket.close(MOVED, url);
    throw new BrainError("session_owned", `session ${session} is owned by the server at ${url}`, {
      details: { url },
    });
  }

  async #delete(session: string): Promise<null> {
    // A host's session ids are its own: deleting one it never had answers as deleting a missing one does.
    const meta = await this.#journal.getSession(session);
    if (!meta || !ownedBy(meta.host, this.#registration)) return null;
    const ids = [...this.#host.handles].filter(([, open]) => open.id === session).map(([id]) => id);
    await Promise.allSettled(ids.map(this.#endHandle));
    await this.#backend.delete(session);
    return null;
  }

  async #list(): Promise<SessionMeta[]> {
    return (await this.#backend.list())
      .filter((meta) => this.#host.keeps(meta.id) && ownedBy(meta.host, this.#registration))
      .map((meta) => ({ ...meta, id: this.#host.sessionId(meta.id) }));
  }

  #endHandle = async (id: string): Promise<void> => {
    const session = this.#host.handles.get(id);
    this.#host.handles.delete(id);
    await session?.end();
    if (session) this.#host.forget(session.id);
  };

  async #owned(session: string): Promise<SessionMeta> {
    const meta = await this.#journal.getSession(session);
    const shown = this.#host.sessionId(session);
    if (!meta) throw noSession(shown);
    checkOwner(shown, meta.host, this.#registration);
    return meta;
  }

  #handle(id: string): Session {
    const session = this.#host.handles.get(id);
    if (!session) throw new BrainError("session_closed", `session handle ${id} is not open`);
    return session;
  }

  // -- calls this client starts ------------------------------------------------------------------

  #start(frame: RequestOf<"start"> & { id: number }): Promise<Replies["start"] | typeof ANSWERED> {
    const session = this.#handle(frame.handle);
    const activation = frame.activation === undefined ? undefined : this.#activation(session, frame.activation);
    this.#host.reserveCall();
    // An invoke to this handle made while the intent commits travels with the reply.
    this.#host.hold(frame.handle);
    const signal = frame.cancelled ? AbortSignal.abort() : undefined;
    const options = { deadline: frame.deadline, activation, traceparent: frame.traceparent, signal };
    return session.start(frame.tool, frame.input, options).then((call) => {
      const held = this.#host.release(frame.handle, session.id, call.sequence);
      this.#track(session.id, call, activation);
      const value: Replies["start"] = !held
        ? { call: call.sequence }
        : held.traceparent === undefined
        ? { call: call.sequence, run: true }
        : { call: call.sequence, run: true, traceparent: held.traceparent };
      // Sent here, with the release: an abort of the released invoke can then only follow the reply that carries it.
      send(this.#socket, { t: "reply", id: frame.id, value });
      return ANSWERED;
    }, (error) => {
      this.#host.callEnded();
      this.#host.release(frame.handle, undefined, undefined);
      throw error;
    });
  }

  /** Follows a started call to its end: one subscription frees its room, keeps it for a late cancel, pushes its end. */
  #track(session: string, call: ToolCall, activation: Activation | undefined): void {
    this.#calls.track(session, call);
    const started: Started = { call, finishing: false, activation };
    this.#started.set(session, call.sequence, started);
    call.ended.then((end) => {
      this.#host.callEnded();
      this.#calls.ended(session, call.sequence);
      if (!started.finishing) this.#pushEnded(session, end);
    }, (error) => {
      this.#host.callEnded();
      this.#calls.ended(session, call.sequence);
      // Its end did not commit here (a failing store, or another server took the session over). A client that
      // reads it is told so at once, as an embedded caller is; the session's next owner ends the call.
      if (this.#protocol >= 2) return this.#pushFailed(session, call.sequence, error);
      // An older client waits for that end, and hears it when the journal has it.
      const forget = () => this.#started.delete(session, call.sequence);
      findEnd(this.#journal.subscribe(session, { from: call.sequence, signal: this.#closed.signal }), call.sequence)
        .then((end) => end ? this.#pushEnded(session, end) : forget(), forget);
    });
  }

  /** Sends a started call's end once: as a push, or as the answer to the finish request `answer` names. */
  #pushEnded(session: string, end: CallEnd, answer?: { id: number; late: boolean }): boolean {
    const started = this.#started.get(session, end.call);
    if (!started) return false;
    this.#started.delete(session, end.call);
    const frame: Extract<ServerFrame, { t: "ended" }> = {
      t: "ended",
      session: this.#host.sessionId(session),
      call: end.call,
      end,
    };
    if (answer) (frame.id = answer.id, frame.late = answer.late);
    if (started.activation) frame.usage = usageOf(started.activation);
    send(this.#socket, frame);
    return true;
  }

  /**
   * The server is shutting down and its sessions have ended: a call started here
   * whose end is still to be pushed could not commit it (the store failed).
   * The client is told so now, as it would be of any end that could not commit,
   * rather than waiting for a server that may never come back; the session's
   * next owner ends the call.
   */
  abandon(): void {
    if (this.#protocol < 2) return;
    const error = new BrainError(
      "connection_lost",
      "the Brain server shut down before the call's end committed; the session's next owner ends it, and its " +
        "records say how",
    );
    for (const [session, call] of [...this.#started.entries()]) this.#pushFailed(session, call, error);
    // Sent now: the socket closes next, before a queued batch would go out.
    outboxOf(this.#socket).flush();
  }

  /** Tells the client, once, that a started call's end could not commit here, and why. */
  #pushFailed(session: string, call: number, error: unknown): void {
    const started = this.#started.get(session, call);
    if (!started) return;
    this.#started.delete(session, call);
    const frame: Extract<ServerFrame, { t: "ended" }> = {
      t: "ended",
      session: this.#host.sessionId(session),
      call,
      error: this.#host.shownError(errorFrame(error)),
    };
    if (started.activation) frame.usage = usageOf(started.activation);
    send(this.#socket, frame);
  }

  /** The usage of the activation the client named for a call it started here and that has not ended. */
  #usage(session: string, call: number): Usage | undefined {
    const activation = this.#started.get(session, call)?.activation;
    return activation && usageOf(activation);
  }

  async #wait(session: string, call: number): Promise<CallEnd | null> {
    await this.#owned(session);
    const open = this.#calls.get(session, call)?.ended;
    if (open) return await open;
    // Only a call's end is waited for: a sequence that starts no call would be followed until the socket closes.
    const [started] = await this.#journal.read(session, { from: call, limit: 1 });
    if (started?.sequence !== call || started.kind !== "tool_call_started") {
      throw new BrainError("call_not_found", `session ${this.#host.sessionId(session)} has no call ${call}`);
    }
    // A wait follows the journal as a record stream does, and counts as one.
    this.#host.checkStreamRoom(this.#streams.size + this.#waits);
    this.#waits++;
    try {
      return await findEnd(this.#journal.subscribe(session, { from: call, signal: this.#closed.signal }), call) ?? null;
    } finally {
      this.#waits--;
    }
  }

  async #cancel(session: string, sequence: number, message: string | undefined): Promise<CallEnd> {
    await this.#owned(session);
    const call = this.#calls.get(session, sequence);
    if (call) return await call.cancel(message);
    const ended = await findEnd(await this.#journal.read(session, { from: sequence }), sequence);
    if (ended) return ended;
    throw new BrainError("call_not_found", `call ${sequence} of session ${session} is not open here`);
  }

  #activation(session: Session, id: string): Activation {
    return this.#host.activation(session.id, id, () => new Activation({ id, ...budgets(session) }));
  }

  // -- records -----------------------------------------------------------------------------------

  /** `records` as this host sees them: under its own session id. */
  #shown<R extends JournalRecord>(records: R[]): R[] {
    return records.map((record) => ({ ...record, sessionId: this.#host.sessionId(record.sessionId) }));
  }

  async #subscribe(stream: number, session: string, from: number | undefined): Promise<null> {
    await this.#owned(session);
    // A stream is named by its request's id: reusing one would hide the first stream from the limit and unsubscribe.
    if (this.#streams.has(stream)) throw new BrainError("protocol_error", `stream ${stream} is already open`);
    this.#host.checkStreamRoom(this.#streams.size + this.#waits);
    const controller = new AbortController();
    this.#streams.set(stream, controller);
    this.#forward(stream, session, from, controller.signal).finally(() => this.#streams.delete(stream));
    return null;
  }

  /**
   * Sends a session's records as `record` frames until `signal` aborts or the journal ends the follow. A
   * follow that fails (its session deleted meanwhile: `session_not_found`) ends the stream with its error, as
   * an embedded follower's; a closed journal ends it quietly, as a closed Brain's.
   */
  async #forward(stream: number, session: string, from: number | undefined, signal: AbortSignal): Promise<void> {
    let failed: WireError | undefined;
    try {
      for await (const record of this.#journal.subscribe(session, { from, signal })) {
        send(this.#socket, { t: "record", stream, record: this.#shown([record])[0] });
      }
    } catch (error) {
      if (error instanceof BrainError && error.code !== "journal_closed") {
        failed = this.#host.shownError(errorFrame(error));
      }
    }
    if (!signal.aborted) send(this.#socket, failed ? { t: "closed", stream, error: failed } : { t: "closed", stream });
  }

  // -- reports of dispatched calls ---------------------------------------------------------------

  async #finish(frame: RequestOf<"finish"> & { id: number }): Promise<Replies["finish"] | typeof ANSWERED> {
    const { session, call } = frame;
    const sink = this.#host.sink(session, call);
    this.#host.endedByHost(session, call);
    this.#host.settle(session, call);
    const started = this.#started.get(session, call);
    if (!started) {
      const { sequence, late } = await sink.finish(published(frame), frame.cause);
      return { sequence, late };
    }
    // The finish's reply is the call's `ended` push, sent once the end is known.
    started.finishing = true;
    try {
      const { sequence, late } = await sink.finish(published(frame), frame.cause);
      const end = await started.call.ended;
      started.finishing = false;
      return this.#pushEnded(session, end, { id: frame.id, late }) ? ANSWERED : { sequence, late };
    } catch (error) {
      started.finishing = false;
      started.call.ended.then((end) => this.#pushEnded(session, end), () => {});
      throw error;
    }
  }

  #record(session: string, call: number, records: RequestOf<"record">["records"]): Promise<JournalRecord[]> {
    const sink = this.#host.sink(session, call);
    if (records.some((record) => record.call !== call)) {
      throw new BrainError("protocol_error", `a host records environment changes only for call ${call}`);
    }
    return sink.record(records);
  }
}

/** The answer a `parsed` notice carries: a value, or issues (anything else is one issue saying so). */
function parsedValue(frame: NoticeOf<"parsed">): ParsedValue {
  if (frame.error === undefined) return { value: frame.value ?? null };
  const issues = Array.isArray(frame.error) ? frame.error : [];
  const checked = issues.filter((issue): issue is { path: (string | number)[]; message: string; code?: JsonValue } =>
    typeof issue === "object" && issue !== null && !Array.isArray(issue) && typeof issue.message === "string" &&
    Array.isArray(issue.path) && issue.path.every((part) => typeof part === "string" || typeof part === "number")
  ).map(({ path, message, code }) => ({ path, message, code: isIssueCode(code) ? code : "custom" }));
  return {
    issues: checked.length > 0
      ? checked
      : [{ path: [], code: "custom", message: "the host's schema refused the value" }],
  };
}

/** A Zod issue code as a host reports it: a short identifier. */
function isIssueCode(code: unknown): code is string {
  return typeof code === "string" && /^[a-z_]{1,64}$/.test(code);
}

const reports = new Set(["emit", "model", "result", "returned", "finish", "record"]);

function isReport(kind: string | undefined): boolean {
  return kind !== undefined && reports.has(kind);
}

/** What `activation` has spent so far. */
function usageOf(activation: Activation): Usage {
  return { emittedBytes: activation.emittedBytes, modelCalls: activation.modelCalls };
}

/** The budgets `session` gives each of its activations. */
function budgets(session: Session): Budgets {
  const { maxEmittedBytes, maxModelCalls } = session.activation();
  return { maxEmittedBytes, maxModelCalls };
}

/** The session's server model by name and its Agentloop options, as the backend takes them. */
function served({ model, agentloop }: Conversation): { model?: string; agentloop?: AgentloopOptions } {
  if (model === undefined) return {};
  if (agentloop === undefined) return { model };
  const { system, toolDeadlineMs } = agentloop;
  return {
    model,
    agentloop: {
      ...(system === undefined ? {} : { system }),
      ...(toolDeadlineMs === undefined ? {} : { toolDeadlineMs: toolDeadlineMs ?? Infinity }),
    },
  };
}

function published(frame: { outcome?: Outcome; content?: string }): PublishedResult | undefined {
  if (frame.outcome === undefined) return undefined;
  return frame.content === undefined ? { outcome: frame.outcome } : { outcome: frame.outcome, content: frame.content };
}

/** The end of `call` as its `tool_call_finished` record among `records` tells it, if it is there. */
async function findEnd(
  records: AsyncIterable<JournalRecord> | JournalRecord[],
  call: number,
): Promise<CallEnd | undefined> {
  for await (const record of records) {
    if (record.kind === "tool_call_finished" && record.call === call) {
      return { call, sequence: record.sequence, cause: record.cause, outcome: record.outcome };
    }
  }
  return undefined;
}
