import assert from "node:assert/strict";
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";
import { Brain } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { mcpEnv } from "../../src/mcp/mod.ts";
import { ofKind } from "../_support/until.ts";

/**
 * An SDK McpServer over the SDK's streamable HTTP transport on 127.0.0.1: `steps`
 * reports three progress steps and answers; `cut` counts its calls and never answers.
 */
function sdkServer() {
  const cutCalled = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  let cuts = 0;
  const transports = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const id = request.headers.get("mcp-session-id");
    if (id) return await transports.get(id)!.handleRequest(request);
    const mcp = new McpServer({ name: "sdk-http", version: "1" });
    mcp.registerTool(
      "steps",
      { description: "Three progress steps.", inputSchema: { label: z.string() } },
      async ({ label }, extra) => {
        for (let progress = 1; progress <= 3; progress++) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: extra._meta!.progressToken!, progress, total: 3 },
          });
        }
        return { content: [{ type: "text", text: `${label} done` }] };
      },
    );
    mcp.registerTool("cut", { description: "Counts the call and waits." }, async () => {
      cuts++;
      cutCalled.resolve();
      await release.promise;
      return { content: [] };
    });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      onsessioninitialized: (opened) => void transports.set(opened, transport),
    });
    await mcp.connect(transport);
    return await transport.handleRequest(request);
  });
  return {
    port: server.addr.port,
    cutCalled: cutCalled.promise,
    get cuts() {
      return cuts;
    },
    async [Symbol.asyncDispose]() {
      release.resolve();
      await Promise.allSettled([...transports.values()].map((transport) => transport.close()));
      await server.shutdown();
    },
  };
}

/** A TCP proxy on 127.0.0.1 to `port` whose `cut()` drops every connection at once. */
function proxy(port: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  const piping: Promise<unknown>[] = [];
  const accepting = (async () => {
    for await (const client of listener) {
      const upstream = await Deno.connect({ hostname: "127.0.0.1", port });
      open.add(client).add(upstream);
      piping.push(
        client.readable.pipeTo(upstream.writable).catch(() => {}),
        upstream.readable.pipeTo(client.writable).catch(() => {}),
      );
    }
  })().catch(() => {});
  const cut = () => {
    for (const conn of open) {
      try {
        conn.close();
      } catch {
        // Already closed by its pipe.
      }
    }
    open.clear();
  };
  return {
    port: (listener.addr as Deno.NetAddr).port,
    cut,
    async [Symbol.asyncDispose]() {
      listener.close();
      cut();
      await accepting;
      await Promise.allSettled(piping);
    },
  };
}

Deno.test("mcpEnv over streamable HTTP: progress before the result, a cut connection is unknown, sent once", async () => {
  await using server = sdkServer();
  await using line = proxy(server.port);
  await using brain = new Brain({ allow: { net: ["127.0.0.1"] } });
  const env = mcpEnv({ name: "sdk-http", url: `http://127.0.0.1:${line.port}/mcp` });
  const session = await brain.sessions.create({ environments: [env] });
  assert.deepEqual(session.tools.map((placed) => placed.tool.name), ["steps", "cut"]);

  const steps = await session.call("steps", { label: "http" });
  assert.equal(steps.cause, "finish");
  const records = await session.read();
  const kinds = records.filter((record) => "call" in record && record.call === steps.call)
    .map((record) => record.kind === "tool_event" ? `${record.kind} ${JSON.stringify(record.data)}` : record.kind);
  assert.deepEqual(kinds, [
    `tool_event {"progress":1,"total":3}`,
    `tool_event {"progress":2,"total":3}`,
    `tool_event {"progress":3,"total":3}`,
    "tool_result",
    "tool_call_finished",
  ]);

  const cutting = session.call("cut", {});
  await server.cutCalled;
  line.cut();
  const lost = await cutting;
  assert.equal(lost.cause, "unknown");
  assert.match((lost.outcome as { message: string }).message, /sent and then lost/);

  const again = await session.call("steps", { label: "after" });
  assert.equal(again.outcome.status, "ok");
  assert.equal(server.cuts, 1, "the lost call was sent once and never again");
  const finished = ofKind(await session.read(), "tool_call_finished") as Extract<
    JournalRecord,
    { kind: "tool_call_finished" }
  >[];
  assert.deepEqual(finished.map((record) => record.cause), ["finish", "unknown", "finish"]);
});
