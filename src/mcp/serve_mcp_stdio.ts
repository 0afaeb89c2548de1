// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import process from "node:process";
import type { BrainSession } from "../session/handle.ts";
import { checkServedSession, checkServeOptions, type ServeMcpOptions, toolServer } from "./tool_server.ts";

/** A session's Tools served over this process's stdin and stdout. */
export interface McpStdioServer {
  /** Resolves when the client closes stdin (or {@linkcode McpStdioServer.close} runs). */
  readonly closed: Promise<void>;
  /** Stops serving. */
  close(): Promise<void>;
}

/**
 * Serves a Brain session's placed Tools to an MCP client over this process's
 * stdin and stdout, one JSON-RPC message a line: the entry point of a program an
 * MCP client starts. The Tools behave as with `serveMcp`. Write logs to stderr:
 * stdout belongs to the protocol.
 *
 * @example
 * ```ts ignore
 * import { Brain, tool } from "@aexhq/brain";
 * import { serveMcpStdio } from "@aexhq/brain/mcp";
 * import { z } from "zod";
 *
 * const add = tool({
 *   name: "add",
 *   description: "Add two numbers.",
 *   input: z.object({ a: z.number(), b: z.number() }),
 *   run: ({ a, b }, ctx) => ctx.finish({ sum: a + b }),
 * });
 * const brain = new Brain();
 * const session = await brain.sessions.create({ tools: [add()] });
 * await (await serveMcpStdio(session)).closed;
 * await brain.close();
 * ```
 */
export async function serveMcpStdio(session: BrainSession, options: ServeMcpOptions = {}): Promise<McpStdioServer> {
  checkServedSession("serveMcpStdio", session);
  const server = toolServer(session, checkServeOptions(options));
  const closed = Promise.withResolvers<void>();
  const closing = server.onclose;
  server.onclose = () => {
    closing?.();
    closed.resolve();
  };
  await server.connect(new StdioServerTransport());
  // The SDK's transport does not notice the client closing stdin; the server ends then.
  const ended = () => void server.close();
  process.stdin.once("end", ended);
  closed.promise.then(() => process.stdin.off("end", ended));
  return { closed: closed.promise, close: () => server.close() };
}
