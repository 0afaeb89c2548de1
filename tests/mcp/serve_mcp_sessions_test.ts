import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Brain, type BrainSession } from "../../mod.ts";
import { serveMcp, type ServeMcpHttpOptions } from "../../src/mcp/mod.ts";
import { serve } from "../_support/serve.ts";
import { withDeadline } from "../_support/deadline.ts";
import { hasCode } from "../_support/has_code.ts";
import { stepper } from "./fixtures/brain_tools.ts";

/**
 * `session` served by serveMcp on 127.0.0.1, and the official SDK client's way in: `connect()` opens one MCP
 * session (rejecting as the SDK does when the server refuses it). `await using` closes every client, the
 * handler and the HTTP server.
 */
function served(session: BrainSession, options: ServeMcpHttpOptions) {
  const mcp = serveMcp(session, options);
  const http = serve((request) => mcp.fetch(request));
  const clients: Client[] = [];
  return {
    url: `${http.url}/mcp`,
    async connect(): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
      const transport = new StreamableHTTPClientTransport(new URL(`${http.url}/mcp`));
      const client = new Client({ name: "test", version: "1" });
      clients.push(client);
      await client.connect(transport);
      return { client, transport };
    },
    async [Symbol.asyncDispose]() {
      await Promise.allSettled(clients.map((client) => client.close()));
      await mcp.close();
      await http[Symbol.asyncDispose]();
    },
  };
}

/** The JSON-RPC error the SDK client's `connect` rejected with, from an HTTP 429 answer. */
function refusal(error: unknown): { code: number; message: string; data: Record<string, unknown> } {
  assert.ok(error instanceof StreamableHTTPError, `not an HTTP refusal: ${error}`);
  assert.equal(error.code, 429);
  return JSON.parse(error.message.slice(error.message.indexOf("{"))).error;
}

/** A tools/list with a raw MCP session id: 200 while the session is open, 404 once it is gone. */
async function listStatus(url: string, sessionId: string): Promise<number> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": sessionId,
      "mcp-protocol-version": "2025-06-18",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list", params: {} }),
  });
  await response.body?.cancel();
  return response.status;
}

Deno.test("serveMcp bounds its MCP sessions: one more initialize is refused 429 limit_exceeded over MCP; a session its client ends frees its slot", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [stepper()] });
  await using server = served(session, { maxSessions: 2, sessionIdleMs: 3_600_000 });
  const first = await server.connect();
  const second = await server.connect();

  const error = await server.connect().then(() => assert.fail("a third MCP session opened"), (error) => error);
  const refused = refusal(error);
  assert.equal(refused.code, -32000);
  assert.deepEqual(refused.data, { code: "limit_exceeded", limit: "maxSessions", value: 2 });
  assert.match(refused.message, /^too many MCP sessions: this server's maxSessions is 2;/);

  // The open sessions keep working; ending one through MCP frees its slot for the next client.
  const result = await second.client.callTool({ name: "stepper", arguments: { label: "kept" } });
  assert.deepEqual(result.structuredContent, { label: "kept", steps: 3 });
  const ended = first.transport.sessionId!;
  await first.transport.terminateSession();
  assert.equal(await listStatus(server.url, ended), 404);
  const third = await server.connect();
  assert.deepEqual((await third.client.listTools()).tools.map((tool) => tool.name), ["stepper"]);
  assert.ok(refusal(await server.connect().catch((error) => error)), "the freed slot was taken again");
});

Deno.test("serveMcp counts MCP sessions being initialized: of 8 clients initializing at once, exactly maxSessions open", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [stepper()] });
  await using server = served(session, { maxSessions: 3 });
  const settled = await Promise.allSettled(Array.from({ length: 8 }, () => server.connect()));
  const opened = settled.filter((outcome) => outcome.status === "fulfilled");
  const refused = settled.filter((outcome) => outcome.status === "rejected");
  assert.equal(opened.length, 3);
  for (const outcome of refused) assert.equal(refusal(outcome.reason).data.code, "limit_exceeded");
  for (const outcome of opened) await outcome.value.client.listTools();
});

Deno.test("serveMcp expires an MCP session left idle, freeing its slot; a client holding its event stream open keeps its own", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [stepper()] });
  await using server = served(session, { maxSessions: 2, sessionIdleMs: 100 });
  // The SDK's client keeps a GET event stream open while connected: its session is never idle.
  const kept = await server.connect();
  await kept.client.listTools();
  const left = await server.connect();
  const leftId = left.transport.sessionId!;
  // Closing the client without ending the session (a client that went away) closes its streams only.
  await left.client.close();

  // The abandoned session became idle after the kept one's last answer: only its expiry lets a client in.
  const admitted = await withDeadline(
    (async () => {
      while (true) {
        try {
          return await server.connect();
        } catch (error) {
          assert.equal(refusal(error).data.code, "limit_exceeded");
        }
      }
    })(),
    "the abandoned MCP session to expire",
  );
  assert.equal(await listStatus(server.url, leftId), 404, "the expired session is gone");
  assert.equal(await listStatus(server.url, kept.transport.sessionId!), 200, "the streaming session is kept");
  const result = await kept.client.callTool({ name: "stepper", arguments: { label: "still here" } });
  assert.deepEqual(result.structuredContent, { label: "still here", steps: 3 });
  await admitted.client.listTools();
});

Deno.test("serveMcp refuses session bounds that are not positive with invalid_argument", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [stepper()] });
  for (const maxSessions of [0, -1, 1.5, NaN, Infinity, "2"]) {
    assert.throws(() => serveMcp(session, { maxSessions: maxSessions as number }), hasCode("invalid_argument"));
  }
  for (const sessionIdleMs of [0, -5, NaN, "60000", null]) {
    assert.throws(() => serveMcp(session, { sessionIdleMs: sessionIdleMs as number }), hasCode("invalid_argument"));
  }
  await serveMcp(session, { sessionIdleMs: Infinity }).close();
});
