// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Server } from "@modelcontextprotocol/sdk/server";
import type { BrainSession } from "../embedded/backend.ts";
import { checkServeOptions, type ServeMcpOptions, toolServer } from "./tool_server.ts";

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
export function serveMcp(session: BrainSession, options: ServeMcpOptions = {}): McpHandler {
  checkServeOptions(options);
  const connections = new Map<string, Connection>();
  return {
    async fetch(request: Request): Promise<Response> {
      const id = request.headers.get("mcp-session-id");
      if (id !== null) {
        const connection = connections.get(id);
        if (!connection) return jsonRpcError(404, -32001, "no such MCP session");
        return await connection.transport.handleRequest(request);
      }
      const server = toolServer(session, options);
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (opened) => void connections.set(opened, { server, transport }),
        onsessionclosed: (closed) => void connections.delete(closed),
      });
      await server.connect(transport);
      const response = await transport.handleRequest(request);
      if (transport.sessionId === undefined) await server.close();
      return response;
    },
    async close(): Promise<void> {
      const open = [...connections.values()];
      connections.clear();
      await Promise.allSettled(open.map(({ server }) => server.close()));
    },
  };
}

function jsonRpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status });
}
