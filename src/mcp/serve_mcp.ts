// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Server } from "@modelcontextprotocol/sdk/server";
import type { BrainSession } from "../session/handle.ts";
import { BrainError } from "../outcome/errors.ts";
import { allKeys } from "../outcome/known_keys.ts";
import { checkServedSession, checkServeOptions, type ServeMcpOptions, toolServer } from "./tool_server.ts";
import { McpSessions } from "./mcp_sessions.ts";
import { shownValue } from "../util/shown_value.ts";
import { readBounded } from "../util/read_bounded.ts";
import { errorText } from "../util/error_text.ts";

/** The default {@linkcode ServeMcpHttpOptions.maxSessions}. */
const MAX_SESSIONS = 1_000;
/** The default {@linkcode ServeMcpHttpOptions.sessionIdleMs}: ten minutes. */
const SESSION_IDLE_MS = 600_000;
/** The JSON-RPC error code of a refused `initialize` (the server-error range); `data.code` names the reason. */
const SERVER_ERROR = -32000;

/**
 * Options of {@linkcode serveMcp}: those of every MCP server, and the bounds of its MCP sessions.
 *
 * @example
 * ```ts
 * import { Brain, tool } from "@aexhq/brain";
 * import { serveMcp } from "@aexhq/brain/mcp";
 * import { z } from "zod";
 *
 * const echo = tool({
 *   name: "echo",
 *   description: "Echoes its text.",
 *   input: z.object({ text: z.string() }),
 *   run: ({ text }, ctx) => ctx.finish(text),
 * });
 * const brain = new Brain();
 * try {
 *   const session = await brain.sessions.create({ tools: [echo()] });
 *   const mcp = serveMcp(session, { maxSessions: 1, sessionIdleMs: 60_000 });
 *   const initialize = () =>
 *     mcp.fetch(
 *       new Request("http://127.0.0.1/mcp", {
 *         method: "POST",
 *         headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
 *         body: JSON.stringify({
 *           jsonrpc: "2.0",
 *           id: 1,
 *           method: "initialize",
 *           params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "demo", version: "1" } },
 *         }),
 *       }),
 *     );
 *   await (await initialize()).body?.cancel();
 *   const refused = await initialize();
 *   const { error } = await refused.json();
 *   console.log(refused.status, error.code, error.data.code); // 429 -32000 "limit_exceeded"
 *   await mcp.close();
 * } finally {
 *   await brain.close();
 * }
 * ```
 */
export interface ServeMcpHttpOptions extends ServeMcpOptions {
  /**
   * MCP sessions open at once (each an SDK server of about 25 KB), counting
   * those being initialized; 1,000 by default. One more `initialize` is refused
   * with HTTP 429 and a JSON-RPC error (code -32000) whose `data` is
   * `{ code: "limit_exceeded", limit: "maxSessions", value }`. A session frees
   * its slot when its client ends it (`DELETE`) or when it expires.
   */
  maxSessions?: number;
  /**
   * How long an MCP session lives with no request open, in ms, counted from
   * the end of its last response (an open event stream, such as the one the
   * SDK's client keeps, is a request open); 10 minutes by default, `Infinity`
   * for never. An expired session's id is then unknown: HTTP 404, which tells
   * the client to initialize a new one. Calls it started keep their journaled outcome.
   */
  sessionIdleMs?: number;
}

/** A session's Tools as a streamable HTTP MCP endpoint: a web handler over `Request` and `Response`. */
export interface McpHandler {
  /** Answers one request; mount it in hono with `app.all("/mcp", (c) => mcp.fetch(c.req.raw))`. */
  fetch(request: Request): Promise<Response>;
  /** Ends every MCP session; calls they started keep their journaled outcome. */
  close(): Promise<void>;
}

interface Connection {
  server: Server;
  transport: WebStandardStreamableHTTPServerTransport;
}

/** The options only the HTTP server takes, beside those of every MCP server. */
const HTTP_OPTIONS = allKeys<Omit<ServeMcpHttpOptions, keyof ServeMcpOptions>>({
  maxSessions: true,
  sessionIdleMs: true,
});

/**
 * Serves a Brain session's placed Tools to any MCP client over streamable HTTP
 * (stateful: each client's `initialize` opens an MCP session named by the
 * `mcp-session-id` header). Each `tools/call` runs through the session's journal:
 * committed `ctx.emit` Events reach the client as progress notifications before
 * the result, the finishing result is `structuredContent` plus its content text,
 * an MCP cancellation ends the call `cancelled`, and an `unknown` outcome is an
 * error result that says the Tool may or may not have run. A client that supports
 * MCP tasks may run any Tool as a task (for background Tools that return before
 * they finish); `tasks/cancel` cancels its call.
 *
 * @example
 * ```ts
 * import { Brain, tool } from "@aexhq/brain";
 * import { serveMcp } from "@aexhq/brain/mcp";
 * import { Hono } from "hono";
 * import { z } from "zod";
 *
 * const add = tool({
 *   name: "add",
 *   description: "Add two numbers.",
 *   input: z.object({ a: z.number(), b: z.number() }),
 *   run: ({ a, b }, ctx) => ctx.finish({ sum: a + b }),
 * });
 * const brain = new Brain();
 * try {
 *   const session = await brain.sessions.create({ tools: [add()] });
 *   const mcp = serveMcp(session);
 *   const app = new Hono();
 *   app.all("/mcp", (c) => mcp.fetch(c.req.raw));
 *   // Deno.serve(app.fetch); an MCP client's first request opens its MCP session:
 *   const response = await app.request("/mcp", {
 *     method: "POST",
 *     headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
 *     body: JSON.stringify({
 *       jsonrpc: "2.0",
 *       id: 1,
 *       method: "initialize",
 *       params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "demo", version: "1" } },
 *     }),
 *   });
 *   console.log(response.status, response.headers.has("mcp-session-id")); // 200 true
 *   await response.body?.cancel();
 *   await mcp.close();
 * } finally {
 *   await brain.close();
 * }
 * ```
 */
export function serveMcp(session: BrainSession, options: ServeMcpHttpOptions = {}): McpHandler {
  checkServedSession("serveMcp", session);
  const checked = checkServeOptions(options, HTTP_OPTIONS);
  const { maxSessions = MAX_SESSIONS, sessionIdleMs = SESSION_IDLE_MS } = checked;
  if (!Number.isSafeInteger(maxSessions) || maxSessions <= 0) {
    throw new BrainError("invalid_argument", `maxSessions must be a positive integer, got ${shownValue(maxSessions)}`);
  }
  if (!(typeof sessionIdleMs === "number" && sessionIdleMs > 0)) {
    throw new BrainError(
      "invalid_argument",
      `sessionIdleMs must be a positive number of ms, got ${shownValue(sessionIdleMs)}`,
    );
  }
  const connections = new McpSessions<Connection>(maxSessions, sessionIdleMs, ({ server }) => void server.close());
  return {
    async fetch(given: Request): Promise<Response> {
      const id = given.headers.get("mcp-session-id");
      if (id !== null) {
        return await connections.serve(id, ({ transport }) => transport.handleRequest(given)) ??
          jsonRpcError(404, -32001, "no such MCP session");
      }
      // Read before a slot is reserved: a body that never ends would hold one forever, and enough of them every one.
      let request = given;
      if (given.body !== null) {
        try {
          request = new Request(given, { body: await readBounded(given.body, "an MCP request") });
        } catch (error) {
          const tooLarge = error instanceof BrainError && error.code === "payload_too_large";
          return jsonRpcError(tooLarge ? 413 : 400, PARSE_ERROR, errorText(error));
        }
      }
      if (!connections.reserve()) {
        return jsonRpcError(
          429,
          SERVER_ERROR,
          `too many MCP sessions: this server's maxSessions is ${maxSessions}; a session frees its slot when its ` +
            `client ends it or after ${sessionIdleMs} ms with no request open`,
          { code: "limit_exceeded", limit: "maxSessions", value: maxSessions },
        );
      }
      try {
        const server = toolServer(session, checked);
        const transport = new WebStandardStreamableHTTPServerTransport({
          sessionIdGenerator: () => crypto.randomUUID(),
          onsessioninitialized: (opened) => void connections.add(opened, { server, transport }),
          onsessionclosed: (closed) => void connections.delete(closed),
        });
        try {
          await server.connect(transport);
          const response = await transport.handleRequest(request);
          if (transport.sessionId !== undefined) return connections.initialized(transport.sessionId, response);
          await server.close();
          return response;
        } catch (error) {
          if (transport.sessionId !== undefined) connections.delete(transport.sessionId);
          await server.close();
          throw error;
        }
      } finally {
        connections.unreserve();
      }
    },
    async close(): Promise<void> {
      await Promise.allSettled(connections.clear().map(({ server }) => server.close()));
    },
  };
}

/** JSON-RPC's error code for a request that cannot be read. */
const PARSE_ERROR = -32700;

function jsonRpcError(status: number, code: number, message: string, data?: Record<string, unknown>): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message, ...(data ? { data } : {}) }, id: null }, { status });
}
