import type { JournalRecord } from "../../journal/records.ts";
import type { CallEnd } from "../../session/call_state.ts";
import { BrainError } from "../../outcome/errors.ts";
import type { JsonValue } from "../../outcome/json.ts";
import { fail } from "../../outcome/outcome.ts";
import { runHostTool } from "../../run/host_tool.ts";
import type { PlacedTool } from "../../contract/placement.ts";
import {
  type ClientOp,
  decodeFrame,
  errorFromFrame,
  HOST_PATH,
  type RequestOf,
  SERVER_TOKEN_HEADER,
  type ServerFrame,
  serverFrame,
  type WireAgentloop,
} from "../protocol.ts";
import { RecordStream } from "./record_stream.ts";
import { RemoteSink } from "./remote_sink.ts";

/** Where and as whom a host connects. */
export interface HostConnectionOptions {
  /** The Brain server's base URL, `http://` or `ws://`. */
  url: string;
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
}

/** How a request behaves when the connection is lost. */
export interface RequestOptions {
  /** The request is idempotent: resent after a reconnect instead of failing with `connection_lost`. */
  retry?: boolean;
  /** Only valid on the connection of this generation: reports of a dispatched call. */
  generation?: number;
}

interface Pending {
  frame: Record<string, unknown> & { id: number };
  retry: boolean;
  generation: number | undefined;
  sent: boolean;
  resolve: (value: JsonValue) => void;
  reject: (error: unknown) => void;
}

interface HostedHandle {
  session: string;
  tools: ReadonlyMap<string, PlacedTool>;
  conversation: HandleConversation;
}

/** The server model a handle's session names and its Agentloop options, resent when the handle is reattached. */
export interface HandleConversation {
  /** The server model's name. */
  model?: string;
  /** Agentloop options as they travel. */
  agentloop?: WireAgentloop;
}

type State = "connecting" | "attached" | "closed" | "failed";

/**
 * The SDK side of the host connection: one WebSocket shared by every session
 * and Tool of one Brain client. Requests wait for the connection; dispatched
 * calls run with `runHostTool`. A lost connection aborts local in-flight calls,
 * fails requests that were sent and are not idempotent, and reconnects the same
 * host with exponential backoff. Nothing that was dispatched is ever run again.
 */
export class HostConnection {
  #options: Required<Omit<HostConnectionOptions, "serverToken">> & Pick<HostConnectionOptions, "serverToken">;
  #socket: WebSocket | undefined;
  #state: State = "connecting";
  #failure: BrainError | undefined;
  /** Increments with every attached connection; a call's reports are valid only on the generation it arrived on. */
  #generation = 0;
  #attempt = 0;
  #opened = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #nextId = 1;
  #pending = new Map<number, Pending>();
  #handles = new Map<string, HostedHandle>();
  #running = new Map<string, AbortController>();
  #streams = new Map<number, RecordStream>();
  #followers = new Set<RecordStream>();
  #ends = new Map<string, PromiseWithResolvers<CallEnd>>();
  #socketClosed: Promise<void> = Promise.resolve();

  constructor(options: HostConnectionOptions) {
    this.#options = { minDelay: 50, maxDelay: 2_000, ...options };
    this.#connect();
  }

  /** Sends one request and resolves with its reply's value. */
  request<O extends ClientOp>(op: O, body: Omit<RequestOf<O>, "op">, options: RequestOptions = {}): Promise<JsonValue> {
    return this.#enqueue(op, body, options).promise;
  }

  /**
   * The end of a call this client started: Brain pushes it, and after a
   * reconnect it is asked for again, since reading it is idempotent.
   * Call it right after the `start` reply, before the push can arrive.
   */
  awaitEnd(session: string, call: number): Promise<CallEnd> {
    const key = `${session}:${call}`;
    const end = this.#ends.get(key) ?? Promise.withResolvers<CallEnd>();
    this.#ends.set(key, end);
    end.promise.catch(() => {});
    return end.promise;
  }

  /** Registers the handlers of a session handle, so dispatched calls find them. */
  addHandle(
    handle: string,
    session: string,
    tools: readonly PlacedTool[],
    conversation: HandleConversation = {},
  ): void {
    this.#handles.set(handle, {
      session,
      tools: new Map(tools.map((placed) => [placed.tool.name, placed])),
      conversation,
    });
  }

  /** Releases a handle's handlers. */
  removeHandle(handle: string): void {
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
    this.#abortRunning("the Brain client closed");
    this.#failAll(new BrainError("session_closed", "this Brain is closed"));
    this.#socket?.close(1000, "closed");
    await this.#socketClosed;
  }

  #enqueue(op: string, body: object, { retry = false, generation }: RequestOptions) {
    const { promise, resolve, reject } = Promise.withResolvers<JsonValue>();
    if (this.#state === "closed" || this.#state === "failed") {
      reject(this.#failure ?? new BrainError("session_closed", "this Brain is closed"));
      return { id: 0, promise };
    }
    if (generation !== undefined && (generation !== this.#generation || this.#state !== "attached")) {
      reject(lost());
      return { id: 0, promise };
    }
    const id = this.#nextId++;
    const pending: Pending = { frame: { id, op, ...body }, retry, generation, sent: false, resolve, reject };
    this.#pending.set(id, pending);
    if (this.#state === "attached") this.#send(pending);
    return { id, promise };
  }

  #send(pending: Pending): void {
    pending.sent = true;
    try {
      this.#socket!.send(JSON.stringify(pending.frame));
    } catch {
      // The socket is closing; its close event settles this request.
    }
  }

  #subscribe(stream: RecordStream): void {
    const { id, promise } = this.#enqueue("subscribe", { session: stream.session, from: stream.next }, {});
    if (id !== 0) this.#streams.set(id, stream);
    promise.catch((error) => {
      if (!(error instanceof BrainError && error.code === "connection_lost")) stream.end(error);
    });
  }

  #connect(): void {
    const { url, token, host, serverToken } = this.#options;
    const endpoint = new URL(HOST_PATH, url.replace(/^http/, "ws"));
    endpoint.searchParams.set("host", host);
    // Deno's WebSocket takes headers; the tokens never appear in a URL.
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (serverToken !== undefined) headers[SERVER_TOKEN_HEADER] = serverToken;
    const socket = new WebSocket(endpoint, { headers } as unknown as string[]);
    this.#socket = socket;
    const closed = Promise.withResolvers<void>();
    this.#socketClosed = closed.promise;
    socket.onopen = () => this.#attach(socket);
    socket.onmessage = (event) => this.#receive(socket, event.data);
    socket.onerror = (event) => {
      const message = (event as ErrorEvent).message ?? "";
      if (/\b401\b/.test(message)) {
        this.#fail(new BrainError("unauthorized", `the Brain server refused host ${host}: wrong or missing token`));
      } else if (!this.#opened) {
        this.#fail(new BrainError("connection_lost", `cannot connect to the Brain server at ${url}: ${message}`));
      }
    };
    socket.onclose = () => {
      closed.resolve();
      if (this.#socket === socket) this.#lost();
    };
  }

  #attach(socket: WebSocket): void {
    this.#opened = true;
    const handles = [...this.#handles].map(([handle, { session, tools, conversation }]) => ({
      handle,
      session,
      ...(tools.size > 0 ? { tools: [...tools.values()].map((placed) => placed.advertised) } : {}),
      ...conversation,
    }));
    const id = this.#nextId++;
    this.#pending.set(id, {
      frame: { id, op: "attach", handles },
      retry: false,
      generation: undefined,
      sent: true,
      resolve: () => {
        if (this.#socket !== socket || this.#state !== "connecting") return;
        this.#state = "attached";
        this.#generation++;
        this.#attempt = 0;
        for (const pending of this.#pending.values()) if (!pending.sent) this.#send(pending);
        if (this.#generation > 1) this.#askForEnds();
        const subscribed = new Set(this.#streams.values());
        for (const stream of this.#followers) if (!subscribed.has(stream)) this.#subscribe(stream);
      },
      reject: (error) => this.#fail(error instanceof BrainError ? error : lost()),
    });
    socket.send(JSON.stringify({ id, op: "attach", handles }));
  }

  #receive(socket: WebSocket, data: unknown): void {
    let frame: ServerFrame;
    try {
      frame = decodeFrame(serverFrame, data);
    } catch {
      socket.close(4002, "protocol error");
      return;
    }
    switch (frame.t) {
      case "reply": {
        const pending = this.#pending.get(frame.id);
        if (!pending) return;
        this.#pending.delete(frame.id);
        if (frame.error) pending.reject(errorFromFrame(frame.error));
        else pending.resolve(frame.value ?? null);
        return;
      }
      case "invoke":
        return this.#invoke(frame);
      case "abort":
        this.#running.get(`${frame.session}:${frame.call}`)?.abort(
          new BrainError("cancelled", `the call ended: ${frame.cause}`),
        );
        return;
      case "ended":
        this.#ends.get(`${frame.session}:${frame.call}`)?.resolve(frame.end);
        this.#ends.delete(`${frame.session}:${frame.call}`);
        return;
      case "record":
        this.#streams.get(frame.stream)?.push(frame.record);
        return;
      case "closed":
        this.#streams.get(frame.stream)?.end();
        this.#streams.delete(frame.stream);
        return;
    }
  }

  #invoke(frame: Extract<ServerFrame, { t: "invoke" }>): void {
    const key = `${frame.session}:${frame.call}`;
    const controller = new AbortController();
    this.#running.set(key, controller);
    const sink = new RemoteSink({
      connection: this,
      session: frame.session,
      call: frame.call,
      generation: this.#generation,
      signal: controller.signal,
      done: () => {
        if (this.#running.get(key) === controller) this.#running.delete(key);
      },
    });
    const placed = this.#handles.get(frame.handle)?.tools.get(frame.tool);
    const failed = (code: string, message: string) => sink.finish({ outcome: fail(code, message) }, "error");
    if (!placed) {
      failed("unknown_tool", `this host holds no handler for ${frame.tool}`).catch(() => {});
      return;
    }
    const invocation = {
      sessionId: frame.session,
      sequence: frame.call,
      tool: frame.tool,
      input: frame.input,
      deadline: frame.deadline,
    };
    runHostTool(placed.tool, placed.options, invocation, sink)
      .catch((error) => failed("tool_error", error instanceof Error ? error.message : String(error)))
      .catch(() => {});
  }

  #askForEnds(): void {
    for (const [key, end] of this.#ends) {
      const [session, call] = [key.slice(0, key.lastIndexOf(":")), Number(key.slice(key.lastIndexOf(":") + 1))];
      this.request("wait", { session, call }, { retry: true }).then(
        (value) => {
          this.#ends.delete(key);
          end.resolve(value as unknown as CallEnd);
        },
        (error) => {
          this.#ends.delete(key);
          end.reject(error);
        },
      );
    }
  }

  #lost(): void {
    this.#socket = undefined;
    if (this.#state === "closed" || this.#state === "failed") return;
    this.#state = "connecting";
    this.#abortRunning("the connection to Brain was lost");
    for (const [id, pending] of this.#pending) {
      if (pending.sent && pending.retry) pending.sent = false;
      else if (pending.sent || pending.generation !== undefined) {
        this.#pending.delete(id);
        pending.reject(lost());
      }
    }
    this.#streams.clear();
    const { minDelay, maxDelay } = this.#options;
    const delay = Math.min(maxDelay, minDelay * 2 ** this.#attempt++) * (0.5 + Math.random() / 2);
    this.#timer = setTimeout(() => this.#connect(), delay);
  }

  #fail(error: BrainError): void {
    if (this.#state === "closed" || this.#state === "failed") return;
    this.#state = "failed";
    this.#failure = error;
    clearTimeout(this.#timer);
    this.#abortRunning(error.message);
    this.#failAll(error);
    this.#socket?.close(1000, "failed");
  }

  #failAll(error: BrainError): void {
    for (const end of this.#ends.values()) end.reject(error);
    this.#ends.clear();
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
    for (const stream of this.#streams.values()) stream.end(error);
    for (const stream of this.#followers) stream.end(error);
    this.#streams.clear();
  }

  #abortRunning(message: string): void {
    for (const controller of this.#running.values()) controller.abort(new BrainError("connection_lost", message));
    this.#running.clear();
  }
}

function lost(): BrainError {
  return new BrainError("connection_lost", "the connection to Brain was lost; the request may or may not have run");
}
