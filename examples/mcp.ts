/**
 * MCP both ways. A Brain session places the reference MCP server's tools with
 * `mcpEnv` (server-everything, started by Deno over stdio with only its grant),
 * its Agentloop calls one that reports progress, and the same session is served
 * back to any MCP client with `serveMcp`; here the official SDK's client calls it
 * over streamable HTTP on 127.0.0.1. Every call, progress step and result is in
 * the session's journal in order. Run it with
 * `deno run --allow-run=deno --allow-env --allow-net=127.0.0.1 examples/mcp.ts`.
 */
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Brain, formatRecord, type JournalRecord, ScriptedProvider } from "../mod.ts";
import { mcpEnv, serveMcp } from "../src/mcp/mod.ts";

/** Variables server-everything reads when it starts; its process gets exactly these. */
const variables = ["GZIP_MAX_FETCH_SIZE", "GZIP_MAX_FETCH_TIME_MILLIS", "GZIP_ALLOWED_DOMAINS"];

/** The reference server's tools, placed in a Brain binding named `everything`. */
export const everything = mcpEnv({
  name: "everything",
  command: "deno",
  args: ["run", "npm:@modelcontextprotocol/server-everything@2026.8.31", "stdio"],
  env: variables,
  tools: ["echo", "get-sum", "trigger-long-running-operation"],
  timeoutMs: 60_000,
});

/** What one run shows: the journal, and what the MCP client got back from the served session. */
export interface McpDemo {
  /** The session's records. */
  records: JournalRecord[];
  /** The tools the MCP client listed. */
  listed: string[];
  /** The progress messages the MCP client received for its call. */
  progress: string[];
  /** The text of the MCP client's result. */
  text: string;
}

/** Runs the demonstration and returns what it saw. */
export async function main(): Promise<McpDemo> {
  const provider = new ScriptedProvider([
    { toolCalls: [{ name: "trigger-long-running-operation", input: { duration: 0.2, steps: 2 } }] },
    "The operation finished.",
  ]);
  const brain = new Brain({ allow: { run: ["deno"], env: variables } });
  try {
    const session = await brain.sessions.create({
      environments: [everything],
      model: { provider, model: "scripted" },
    });
    await session.send("Run the long operation.");

    const mcp = serveMcp(session);
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => mcp.fetch(request));
    const client = new Client({ name: "demo", version: "1" });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.addr.port}/mcp`)));
      const listed = (await client.listTools()).tools.map((tool) => tool.name);
      const progress: string[] = [];
      const result = await client.callTool(
        { name: "trigger-long-running-operation", arguments: { duration: 0.2, steps: 2 } },
        undefined,
        { onprogress: ({ message }) => progress.push(message ?? "") },
      );
      const [block] = result.content as { type: string; text: string }[];
      return { records: await session.read(), listed, progress, text: block.text };
    } finally {
      await client.close();
      await mcp.close();
      await server.shutdown();
    }
  } finally {
    await brain.close();
  }
}

if (import.meta.main) {
  const { records, listed, progress, text } = await main();
  for (const record of records) console.log(formatRecord(record));
  console.log("an MCP client listed", listed, "and got", progress.length, "progress notifications, then:", text);
}
