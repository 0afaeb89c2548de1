import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";
import { Brain, tool } from "../mod.ts";
import { mcpEnv, serveMcp } from "../src/mcp/mod.ts";

// One server-everything process for each side: the bare SDK client, and a Brain session's mcpEnv.
const EVERYTHING = "npm:@modelcontextprotocol/server-everything@2026.8.31";
const variables = ["GZIP_MAX_FETCH_SIZE", "GZIP_MAX_FETCH_TIME_MILLIS", "GZIP_ALLOWED_DOMAINS"];
/** This very Deno, never `deno` from PATH. */
const DENO = Deno.execPath();

const bare = new Client({ name: "bare", version: "1" });
await bare.connect(
  new StdioClientTransport({
    command: DENO,
    args: ["run", "--no-prompt", `--allow-env=${variables.join(",")}`, EVERYTHING, "stdio"],
    stderr: "ignore",
  }),
);
await bare.listTools();
const brain = new Brain({ allow: { run: [DENO], env: variables } });
const everything = mcpEnv({
  name: "everything",
  command: DENO,
  args: ["run", EVERYTHING, "stdio"],
  env: variables,
  tools: ["echo"],
  timeoutMs: 60_000,
});
const journaled = await brain.sessions.create({ environments: [everything] });

Deno.bench({ name: "bare SDK client tools/call over stdio", group: "mcp stdio call", baseline: true }, async () => {
  await bare.callTool({ name: "echo", arguments: { message: "hi" } });
});

Deno.bench({ name: "journaled mcpEnv call over stdio", group: "mcp stdio call" }, async () => {
  await journaled.call("echo", { message: "hi" });
});

// The same add handler behind the SDK's own McpServer and behind serveMcp, both over streamable HTTP.
const sum = ({ a, b }: { a: number; b: number }) => ({ sum: a + b });

function sdkServer(): (request: Request) => Promise<Response> {
  const transports = new Map<string, WebStandardStreamableHTTPServerTransport>();
  return async (request) => {
    const id = request.headers.get("mcp-session-id");
    if (id) return await transports.get(id)!.handleRequest(request);
    const server = new McpServer({ name: "sdk", version: "1" });
    server.registerTool(
      "add",
      {
        description: "Add two numbers.",
        inputSchema: { a: z.number(), b: z.number() },
        outputSchema: { sum: z.number() },
      },
      (input) => {
        const value = sum(input);
        return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
      },
    );
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      onsessioninitialized: (opened) => void transports.set(opened, transport),
    });
    await server.connect(transport);
    return await transport.handleRequest(request);
  };
}

const add = tool({
  name: "add",
  description: "Add two numbers.",
  input: z.object({ a: z.number(), b: z.number() }),
  output: z.object({ sum: z.number() }),
  run: (input, ctx) => ctx.finish(sum(input)),
});
const served = serveMcp(await brain.sessions.create({ tools: [add()] }));

async function connect(handler: (request: Request) => Promise<Response>) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.addr.port}/mcp`)));
  await client.listTools();
  return { server, client };
}
const sdk = await connect(sdkServer());
const brainHttp = await connect((request) => served.fetch(request));

Deno.bench({ name: "the SDK's McpServer tools/call", group: "mcp server call", baseline: true }, async () => {
  await sdk.client.callTool({ name: "add", arguments: { a: 1, b: 2 } });
});

Deno.bench({ name: "serveMcp tools/call through the journal", group: "mcp server call" }, async () => {
  await brainHttp.client.callTool({ name: "add", arguments: { a: 1, b: 2 } });
});

globalThis.addEventListener("unload", () => {
  bare.close();
  sdk.client.close();
  brainHttp.client.close();
  served.close();
  sdk.server.shutdown();
  brainHttp.server.shutdown();
  brain.close();
});
