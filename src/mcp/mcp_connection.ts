import { boundedBody } from "../util/read_bounded.ts";
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { ErrorCode, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import { fail } from "../outcome/outcome.ts";
import { errorText } from "../util/error_text.ts";
import type { Dispatch } from "../contract/placement.ts";
import { raceSignal } from "../util/signal.ts";
import { progressData, publishedResult } from "./call_result.ts";
import { type StdioCommand, StdioTransport } from "./stdio_transport.ts";
import { TOKEN_PREFIX, TrackedTransport } from "./tracked_transport.ts";

/** Longest wait the SDK accepts; Brain ends calls itself, at their deadline or cancellation. */
const NO_SDK_TIMEOUT = 2 ** 31 - 1;

/** Where an MCP server is: a process Brain starts, or a streamable HTTP endpoint. */
export type McpTarget =
  | { kind: "stdio"; command: StdioCommand }
  | { kind: "http"; url: URL; headers: Readonly<Record<string, string>> };

interface Link {
  client: Client;
  transport: TrackedTransport;
  tools: Tool[];
}

/**
 * One session's connection to an MCP server. It connects when the session is
 * created; a connection that closed is opened again (with the tools listed again)
 * for the next call, never to resend one. Each call is sent once: its progress
 * notifications become ordered `progress` Events, its result the finishing
 * result, and the call's end an MCP cancellation.
 */
export class McpConnection {
  #target: McpTarget;
  #timeoutMs: number;
  #link: Promise<Link> | undefined;
  #current: Link | undefined;
  #closed = false;

  constructor(target: McpTarget, timeoutMs: number) {
    this.#target = target;
    this.#timeoutMs = timeoutMs;
  }

  /** Connects (unless connected) and resolves with the server's tools. */
  async tools(): Promise<Tool[]> {
    return (await this.#linked()).tools;
  }

  /** Runs one dispatched call of the server's tool `name`; everything it learns goes to `dispatch.sink`. */
  async call(name: string, { invocation, sink }: Dispatch): Promise<void> {
    const args = invocation.input;
    if (typeof args !== "object" || args === null || Array.isArray(args)) {
      await sink.finish({ outcome: fail("invalid_input", "MCP tool arguments must be a JSON object") }, "error");
      return;
    }
    let link: Link;
    try {
      link = this.#open() ?? await raceSignal(this.#linked(), sink.signal);
    } catch (error) {
      if (sink.signal.aborted) return;
      await sink.finish({ outcome: fail("setup_failed", (error as Error).message) }, "error");
      return;
    }
    const token = `${TOKEN_PREFIX}${invocation.sessionId}:${invocation.sequence}`;
    const tracked = link.transport.track(token, (progress) => {
      sink.emit("progress", progressData(progress)).catch(() => {});
    });
    // The SDK sends an MCP cancellation whenever the request's signal aborts, even after
    // the response; the call's own signal aborts as it finishes, so only an end before
    // the response reaches the request.
    const request = new AbortController();
    const cancel = () => request.abort(sink.signal.reason);
    sink.signal.addEventListener("abort", cancel, { once: true });
    try {
      const result = await Promise.race([
        link.client.callTool(
          { name, arguments: args as Record<string, unknown>, _meta: { progressToken: token } },
          undefined,
          { signal: request.signal, timeout: NO_SDK_TIMEOUT },
        ).finally(() => sink.signal.removeEventListener("abort", cancel)),
        tracked.lost,
      ]);
      await sink.finish(publishedResult(result as Parameters<typeof publishedResult>[0]));
    } catch (error) {
      if (sink.signal.aborted) return;
      const message = (error as Error).message;
      if (!tracked.handed) {
        await sink.finish({ outcome: fail("connection_lost", `the call was not sent: ${message}`) }, "error");
      } else if (error instanceof McpError && !LOST.includes(error.code)) {
        await sink.finish({
          outcome: fail("protocol_error", errorText(error), {
            details: error.data === undefined
              ? { code: error.code }
              : { code: error.code, data: error.data as JsonValue },
          }),
        }, "error");
      } else {
        await sink.finish({
          outcome: { status: "unknown", message: `the MCP call was sent and then lost: ${message}` },
        }, "unknown");
      }
    } finally {
      tracked.release();
    }
  }

  /** Closes the connection (a stdio server's process exits or is killed); later calls are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    const link = this.#link;
    this.#link = this.#current = undefined;
    await link?.then((open) => open.client.close(), () => {});
  }

  /** The open connection, if there is one. */
  #open(): Link | undefined {
    return this.#closed || this.#current?.transport.closed ? undefined : this.#current;
  }

  #linked(): Promise<Link> {
    if (this.#closed) return Promise.reject(new BrainError("session_closed", "the MCP connection is closed"));
    if (this.#current?.transport.closed) this.#link = this.#current = undefined;
    if (this.#link) return this.#link;
    const link = this.#link = this.#connect();
    link.then((open) => this.#current = open, () => {
      if (this.#link === link) this.#link = undefined;
    });
    return link;
  }

  async #connect(): Promise<Link> {
    const stdio = this.#target.kind === "stdio" ? new StdioTransport(this.#target.command) : undefined;
    const transport: TrackedTransport = new TrackedTransport(
      stdio ?? httpTransport(this.#target as HttpTarget, (id) => transport.streamEnded(id)),
    );
    const client = new Client({ name: "brain", version: "1" });
    try {
      await client.connect(transport, { timeout: this.#timeoutMs });
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : {}, { timeout: this.#timeoutMs });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return { client, transport, tools };
    } catch (error) {
      await client.close().catch(() => {});
      const stderr = stdio?.stderr.trim();
      throw new BrainError(
        "setup_failed",
        `the MCP server did not start: ${(error as Error).message}${stderr ? `; its stderr ends: ${stderr}` : ""}`,
        { cause: error },
      );
    }
  }
}

type HttpTarget = Extract<McpTarget, { kind: "http" }>;

/**
 * A streamable HTTP client transport whose `tools/call` response streams are
 * watched: when one ends, `streamEnded` runs once the messages already read were delivered.
 */
function httpTransport({ url, headers }: HttpTarget, streamEnded: (id: string | number) => void) {
  // Deno's fetch may send a request again on a fresh connection when a reused one breaks
  // before the response starts (measured: an MCP server ran one tools/call twice). A
  // client that never reuses connections never does that.
  const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
  const watched = async (input: string | URL, init?: RequestInit): Promise<Response> => {
    // A redirect is not followed: it could lead past the server's net grant and send a call again.
    const fetched = await fetch(input, { ...init, client, redirect: "manual" });
    // The answer to one request is bounded; the standing GET stream of notifications is not one answer.
    const response = init?.method === "POST" && fetched.body
      ? new Response(boundedBody(fetched.body, `the answer of MCP server ${url.origin}`, MAX_ANSWER_BYTES), fetched)
      : fetched;
    const id = init?.method === "POST" ? toolsCallId(init.body) : undefined;
    if (id === undefined || !response.body) return response;
    const body = endWatched(response.body, () => setTimeout(() => streamEnded(id)));
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { ...headers } },
    fetch: watched,
  });
  const close = transport.close.bind(transport);
  transport.close = async () => {
    await close();
    client.close();
  };
  return transport;
}

/** The most bytes of one answer (a POST's response, JSON or a stream of events) read from an MCP server: 64 MiB. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

const LOST: number[] = [ErrorCode.ConnectionClosed, ErrorCode.RequestTimeout];

function toolsCallId(body: BodyInit | null | undefined): string | number | undefined {
  if (typeof body !== "string") return undefined;
  try {
    const message = JSON.parse(body);
    return message?.method === "tools/call" ? message.id : undefined;
  } catch {
    return undefined;
  }
}

/** The same bytes; `ended` runs once when the stream ends or breaks. */
function endWatched(body: ReadableStream<Uint8Array>, ended: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream({
    async pull(controller) {
      try {
        const { value, done } = await reader.read();
        if (done) {
          controller.close();
          ended();
        } else controller.enqueue(value);
      } catch (error) {
        controller.error(error);
        ended();
      }
    },
    cancel(reason) {
      ended();
      return reader.cancel(reason);
    },
  });
}
