// @ts-types="@modelcontextprotocol/sdk/shared/transport"
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type { JSONRPCMessage, MessageExtraInfo, Progress, RequestId } from "@modelcontextprotocol/sdk/types.js";

/** Brain's progress tokens start with this, so late progress for a finished call is dropped quietly. */
export const TOKEN_PREFIX = "brain:";

/** One `tools/call` request as the transport saw it. */
export interface TrackedCall {
  /** True once the request was handed to the connection: from then on, only a response says what happened. */
  readonly handed: boolean;
  /** Rejects when the connection is lost, or the request's response stream ends, before its response. */
  readonly lost: Promise<never>;
  /** Stops routing the call's progress. */
  release(): void;
}

interface Entry {
  handed: boolean;
  answered: boolean;
  progress: (progress: Progress) => void;
  lose: (reason: Error) => void;
}

/**
 * Wraps an MCP client transport to see one call's traffic in wire order: progress
 * notifications go to the call's handler synchronously, as they arrive, so each
 * is reported before the response that follows it (the SDK's own dispatch can
 * drop a progress notification that arrives together with the result). It also
 * knows whether a request was handed over, and declares it lost when the
 * connection closes or its response stream ends without a response.
 */
export class TrackedTransport implements Transport {
  /** Set by the SDK's Protocol. */
  onclose?: () => void;
  /** Set by the SDK's Protocol. */
  onerror?: (error: Error) => void;
  /** Set by the SDK's Protocol. */
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  #inner: Transport;
  #byToken = new Map<string, Entry>();
  #byId = new Map<RequestId, Entry>();
  #closed = false;

  constructor(inner: Transport) {
    this.#inner = inner;
    inner.onmessage = (message, extra) => this.#receive(message, extra);
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => {
      this.#closed = true;
      for (const entry of this.#byToken.values()) entry.lose(new Error("the MCP connection closed"));
      this.onclose?.();
    };
  }

  /** True once the underlying connection closed. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The MCP session id of a streamable HTTP connection. */
  get sessionId(): string | undefined {
    return this.#inner.sessionId;
  }

  /** Passes the negotiated protocol version on (streamable HTTP sends it as a header). */
  setProtocolVersion(version: string): void {
    this.#inner.setProtocolVersion?.(version);
  }

  start(): Promise<void> {
    return this.#inner.start();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const entry = this.#byToken.get(progressToken(message) ?? "");
    if (entry && "id" in message && message.id !== undefined) {
      entry.handed = true;
      this.#byId.set(message.id, entry);
    }
    await this.#inner.send(message, options);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  /** Follows the `tools/call` request that carries `token` as its progress token. */
  track(token: string, progress: (progress: Progress) => void): TrackedCall {
    const lost = Promise.withResolvers<never>();
    lost.promise.catch(() => {});
    const entry: Entry = { handed: false, answered: false, progress, lose: (reason) => lost.reject(reason) };
    if (this.#closed) entry.lose(new Error("the MCP connection closed"));
    this.#byToken.set(token, entry);
    return {
      get handed() {
        return entry.handed;
      },
      lost: lost.promise,
      release: () => {
        this.#byToken.delete(token);
        for (const [id, tracked] of this.#byId) if (tracked === entry) this.#byId.delete(id);
      },
    };
  }

  /** Declares the request `id` lost unless its response already arrived (its response stream ended). */
  streamEnded(id: RequestId): void {
    const entry = this.#byId.get(id);
    if (entry && !entry.answered) entry.lose(new Error("the MCP response stream ended before the result"));
  }

  #receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    if ("method" in message && message.method === "notifications/progress" && !("id" in message)) {
      const token = String(message.params?.progressToken);
      if (token.startsWith(TOKEN_PREFIX)) {
        const { progressToken: _, _meta: __, ...progress } = message.params as Progress & Record<string, unknown>;
        this.#byToken.get(token)?.progress(progress as Progress);
        return;
      }
    }
    if ("id" in message && message.id !== undefined && !("method" in message)) {
      const entry = this.#byId.get(message.id);
      if (entry) entry.answered = true;
    }
    this.onmessage?.(message, extra);
  }
}

function progressToken(message: JSONRPCMessage): string | undefined {
  if (!("method" in message) || message.method !== "tools/call") return undefined;
  const token = (message.params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
  return typeof token === "string" ? token : undefined;
}
