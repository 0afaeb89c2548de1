/**
 * MCP both ways: {@linkcode mcpEnv} places an MCP server's tools in a Brain
 * session as journaled Brain Tools, and `serveMcp` serves a session's placed
 * Tools to any MCP client.
 *
 * @example
 * ```ts
 * import { mcpEnv } from "@aexhq/brain/mcp";
 * const remote = mcpEnv({ name: "remote", url: "https://mcp.example.com/mcp" });
 * console.log(remote.kind, remote.grant?.net); // "mcp" ["mcp.example.com"]
 * ```
 *
 * @module
 */
export { mcpEnv, type McpEnvCommon, type McpEnvOptions, type McpHttpOptions, type McpStdioOptions } from "./mcp_env.ts";
export { type McpHandler, serveMcp, type ServeMcpHttpOptions } from "./serve_mcp.ts";
export { type McpStdioServer, serveMcpStdio } from "./serve_mcp_stdio.ts";
export type { ServeMcpOptions } from "./tool_server.ts";
export type * from "../env/mod.ts";
export type { BrainSession, ToolCall } from "../session/handle.ts";
export type { Activation } from "../session/activation.ts";
export type { CallOptions } from "../session/call_arguments.ts";
export type { CallEnd } from "../session/call_state.ts";
export type { AssistantMessage, SendOptions } from "../session/conversation.ts";
export type { Journal, ReadOptions, SubscribeOptions } from "../journal/journal.ts";
export type { AcquireOptions, AppendOptions, Lease, StoredLease } from "../journal/lease.ts";
export type { NodeBeat } from "../journal/nodes.ts";
export type { SessionCreateOptions } from "../journal/host_sessions.ts";
