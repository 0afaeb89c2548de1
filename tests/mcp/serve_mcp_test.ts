import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Hono } from "hono";
import { z } from "zod";
import { Brain, BrainError, type BrainSession, tool } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { serveMcp, type ServeMcpOptions } from "../../src/mcp/mod.ts";
import { ofKind, until } from "../_support/until.ts";
import { hang, refuse, stepper } from "./fixtures/brain_tools.ts";
import { arrivals, recording } from "../_support/recording_transport.ts";
import { counting, countingAllow, DENO } from "../_support/mcp_servers.ts";
import { RETURNED_THEN_FINISHED } from "../_support/record_kinds.ts";

/** Serves `session` with serveMcp in a hono app on 127.0.0.1 and connects the SDK's client to it. */
async function connectHttp(session: BrainSession, options?: ServeMcpOptions) {
  const mcp = serveMcp(session, options);
  const app = new Hono();
  app.all("/mcp", (c) => mcp.fetch(c.req.raw));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.fetch);
  const wire = recording(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.addr.port}/mcp`)));
  const client = new Client({ name: "test", version: "1" });
  await client.connect(wire.transport);
  return {
    client,
    wire,
    async [Symbol.asyncDispose]() {
      await client.close();
      await mcp.close();
      await server.shutdown();
    },
  };
}

Deno.test("serveMcp over HTTP: the SDK client lists the Tools with their schemas", async () => {
  await using brain = new Brain();
  const tools = [stepper(), hang(), refuse()];
  const session = await brain.sessions.create({ tools });
  await using connected = await connectHttp(session);
  const { tools: listed } = await connected.client.listTools();
  assert.deepEqual(
    listed.map((tool) => tool.name),
    ["stepper", "hang", "refuse"],
    "a string-input Tool is not served",
  );
  const [served] = listed;
  assert.equal(served.description, "Counts to three, reporting each step.");
  assert.deepEqual(served.inputSchema, tools[0].advertised.inputSchema);
  assert.deepEqual(served.outputSchema, tools[0].advertised.outputSchema);
});

Deno.test("serveMcp over HTTP: committed Events arrive as progress before the structured result", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [stepper()] });
  await using connected = await connectHttp(session);
  const result = await connected.client.callTool({ name: "stepper", arguments: { label: "go" } }, undefined, {
    onprogress: () => {},
  });
  assert.deepEqual(result.structuredContent, { label: "go", steps: 3 });
  assert.deepEqual(result.content, [{ type: "text", text: "go: 3 steps" }]);
  assert.equal(result.isError, undefined);
  const events = ofKind(await session.read(), "tool_event");
  assert.deepEqual(arrivals(connected.wire, "stepper"), [
    ...events.map((event) => `progress ${event.sequence}`),
    "response",
  ]);
  const progress = connected.wire.received.find((message) =>
    "method" in message && message.method === "notifications/progress"
  ) as unknown as { params: { message: string } };
  assert.deepEqual(JSON.parse(progress.params.message), { event: "step", data: { step: 1 } });
  const finished = ofKind(await session.read(), "tool_call_finished");
  assert.deepEqual(finished.map((record) => record.outcome), [{ status: "ok", value: { label: "go", steps: 3 } }]);
});

Deno.test("serveMcp over HTTP: an error outcome is an error result; an unknown tool is refused", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [refuse()] });
  await using connected = await connectHttp(session);
  const result = await connected.client.callTool({ name: "refuse", arguments: {} });
  assert.equal(result.isError, true);
  assert.deepEqual(result.content, [{ type: "text", text: "refused: not today" }]);
  await assert.rejects(connected.client.callTool({ name: "nothing", arguments: {} }), /no tool nothing is served/);
  assert.deepEqual(ofKind(await session.read(), "tool_call_started").map((record) => record.tool), ["refuse"]);
});

Deno.test("serveMcp over HTTP: an MCP cancellation ends the call cancelled", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [hang()] });
  await using connected = await connectHttp(session);
  const abort = new AbortController();
  const calling = connected.client.callTool({ name: "hang", arguments: {} }, undefined, { signal: abort.signal });
  await until(session, (records) => ofKind(records, "tool_call_started").length === 1, "the call's start");
  abort.abort("the user gave up");
  await assert.rejects(calling);
  const records = await until(
    session,
    (seen) => ofKind(seen, "tool_call_finished").length === 1,
    "the call's end",
  );
  assert.equal(ofKind(records, "tool_call_finished")[0].cause, "cancelled");
});

Deno.test("serveMcp with deadlineMs: a call past its deadline is an error result that says timeout", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [hang()] });
  assert.throws(() => serveMcp(session, { deadlineMs: -1 }), (error) => error instanceof BrainError);
  await using connected = await connectHttp(session, { deadlineMs: 50 });
  const result = await connected.client.callTool({ name: "hang", arguments: {} });
  assert.equal(result.isError, true);
  assert.match((result.content as { text: string }[])[0].text, /^timeout: /);
  assert.deepEqual(ofKind(await session.read(), "tool_call_finished").map((record) => record.cause), ["timeout"]);
});

Deno.test("serveMcp over an mcpEnv session: a call lost after sending is an error result saying unknown", async () => {
  await using brain = new Brain({ allow: countingAllow() });
  const session = await brain.sessions.create({ environments: [counting()] });
  await using connected = await connectHttp(session);
  const result = await connected.client.callTool({ name: "vanish", arguments: {} });
  assert.equal(result.isError, true);
  const [block] = result.content as { type: string; text: string }[];
  assert.match(block.text, /^unknown: .*may or may not have run/);
  const finished = ofKind(await session.read(), "tool_call_finished") as Extract<
    JournalRecord,
    { kind: "tool_call_finished" }
  >[];
  assert.deepEqual(finished.map((record) => record.cause), ["unknown"]);
});

Deno.test("serveMcp offers MCP tasks: a background Tool returns, finishes later, and the task has its result", async () => {
  const gate = Promise.withResolvers<void>();
  const background = tool({
    name: "background",
    description: "Returns at once and finishes when the gate opens.",
    input: z.object({}),
    run: (_input, ctx) => {
      gate.promise.then(() => ctx.finish({ done: true }));
      return { started: true };
    },
  });
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [background(), hang()] });
  await using connected = await connectHttp(session);
  const { tools } = await connected.client.listTools();
  assert.ok(tools.every((listed) => listed.execution?.taskSupport === "optional"));
  const seen: string[] = [];
  let result: unknown;
  for await (
    const message of connected.client.experimental.tasks.callToolStream(
      { name: "background", arguments: {} },
      undefined,
      {
        task: { ttl: 60_000 },
      },
    )
  ) {
    seen.push(message.type);
    if (message.type === "taskCreated") {
      await until(session, (records) => ofKind(records, "tool_returned").length === 1, "the Tool's return");
      gate.resolve();
    }
    if (message.type === "result") result = message.result;
  }
  assert.equal(seen[0], "taskCreated");
  assert.equal(seen.at(-1), "result");
  assert.deepEqual((result as { structuredContent: unknown }).structuredContent, { done: true });
  const records = await session.read();
  assert.deepEqual(records.map((record) => record.kind), RETURNED_THEN_FINISHED);

  for await (
    const message of connected.client.experimental.tasks.callToolStream({ name: "hang", arguments: {} }, undefined, {
      task: { ttl: 60_000 },
    })
  ) {
    if (message.type === "taskCreated") await connected.client.experimental.tasks.cancelTask(message.task.taskId);
  }
  const ended = await until(session, (seen) => ofKind(seen, "tool_call_finished").length === 2, "the hang's end");
  assert.equal(ofKind(ended, "tool_call_finished")[1].cause, "cancelled");
});

Deno.test("serveMcpStdio: the SDK client starts the program, lists and calls its Tools with progress", async () => {
  const transport = new StdioClientTransport({
    command: DENO,
    args: ["run", "--no-prompt", new URL("./fixtures/serve_stdio.ts", import.meta.url).pathname],
    stderr: "inherit",
  });
  const wire = recording(transport);
  const client = new Client({ name: "test", version: "1" });
  await client.connect(wire.transport);
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name), ["stepper", "hang", "refuse"]);
    const result = await client.callTool({ name: "stepper", arguments: { label: "stdio" } }, undefined, {
      onprogress: () => {},
    });
    assert.deepEqual(result.structuredContent, { label: "stdio", steps: 3 });
    const order = arrivals(wire, "stepper");
    assert.equal(order.length, 4);
    assert.equal(order.at(-1), "response");
    const refused = await client.callTool({ name: "refuse", arguments: {} });
    assert.equal(refused.isError, true);
  } finally {
    await client.close();
  }
});
