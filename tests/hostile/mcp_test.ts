import assert from "node:assert/strict";
import { Brain, type CallEnd } from "../../mod.ts";
import { mcpEnv } from "../../src/mcp/mod.ts";
import { DENO } from "../_support/mcp_servers.ts";
import { hasCode } from "../_support/has_code.ts";
import { runningChildren, within } from "../_support/processes.ts";

const SERVER = new URL("./fixtures/hostile_mcp_server.ts", import.meta.url).pathname;

/** The hostile MCP server (made with the official SDK) in `mode`, over stdio. */
const hostile = (mode: string, tools?: string[]) =>
  mcpEnv({
    name: "hostile",
    command: DENO,
    args: ["run", SERVER, mode],
    // Only the server that never lists waits out the timeout; the others answer, however loaded the machine.
    timeoutMs: mode === "list_never" ? 1_000 : 30_000,
    ...(tools ? { tools } : {}),
  });

const code = ({ outcome }: CallEnd) => outcome.status === "error" ? outcome.error.code : outcome.status;
const serversGone = () =>
  within(5_000, "every hostile server gone", async () => (await runningChildren("hostile_mcp_server.ts")).length === 0);

Deno.test("hostile MCP listings: names, duplicates, schemas and servers that fail fail session creation with codes", async () => {
  const refused: [string, string][] = [
    ["names", "invalid_tool"],
    ["duplicate", "duplicate_tool"],
    ["not_object", "setup_failed"],
    ["no_schema", "setup_failed"],
    ["exit_now", "setup_failed"],
    ["garbage", "setup_failed"],
    ["list_never", "setup_failed"],
    ["list_throws", "setup_failed"],
  ];
  for (const [mode, expected] of refused) {
    await using brain = new Brain({ allow: { run: [DENO] } });
    await assert.rejects(brain.sessions.create({ environments: [hostile(mode)] }), hasCode(expected as never), mode);
  }
  await using brain = new Brain({ allow: { run: [DENO] } });
  const chosen = await brain.sessions.create({ environments: [hostile("names", ["ok", "__proto__"])] });
  assert.deepEqual(
    chosen.tools.map((placed) => placed.tool.name),
    ["ok", "__proto__"],
    "choosing the good tools works",
  );
  await brain.close();
  await serversGone();
});

Deno.test("hostile MCP results: huge, deep, unknown and failing results end each call once with a code", async () => {
  {
    await using brain = new Brain({ allow: { run: [DENO] } });
    const session = await brain.sessions.create({ environments: [hostile("results")] });
    const expected: [string, string][] = [
      ["huge_text", "budget_exceeded"],
      ["huge_error", "budget_exceeded"],
      ["deep_structured", "invalid_output"],
      ["unknown_block", "protocol_error"],
      ["structured_string", "protocol_error"],
      ["throws", "protocol_error"],
      ["error_no_content", "tool_error"],
      ["never", "timeout"],
      ["exit", "unknown"],
    ];
    for (const [name, want] of expected) {
      // Only "never" waits out its deadline; the others end on their own, however loaded the machine.
      const end = await session.call(name, {}, { timeoutMs: name === "never" ? 500 : 15_000 });
      assert.equal(code(end), want, name);
      if (end.outcome.status === "error") {
        assert.ok(
          end.outcome.error.message.length <= 8_192,
          `${name}: a ${end.outcome.error.message.length}-character message`,
        );
      }
      const finished = (await session.read()).filter((record) =>
        record.kind === "tool_call_finished" && record.call === end.call
      );
      assert.equal(finished.length, 1, name);
    }
  }
  await serversGone();
});

Deno.test("hostile MCP servers: a line that never ends is cut at a bound, the server stopped and the call ended unknown", async () => {
  {
    await using brain = new Brain({ allow: { run: [DENO] } });
    const session = await brain.sessions.create({ environments: [hostile("results")] });
    const end = await session.call("endless_line", {}, { timeoutMs: 30_000 });
    assert.equal(code(end), "unknown");
  }
  await serversGone();
});

/**
 * A streamable HTTP MCP server on 127.0.0.1 written by hand: it initializes and lists one Tool, `big`,
 * and answers its call with a JSON body that never ends.
 */
function endlessAnswerServer(): Deno.HttpServer<Deno.NetAddr> {
  const json = (id: unknown, result: unknown) =>
    Response.json({ jsonrpc: "2.0", id, result }, { headers: { "mcp-session-id": "endless" } });
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    if (request.method !== "POST") return new Response(null, { status: 405 });
    const message = await request.json();
    if (message.method === "initialize") {
      const info = { name: "endless", version: "1" };
      return json(message.id, {
        protocolVersion: message.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: info,
      });
    }
    if (!("id" in message)) return new Response(null, { status: 202 });
    if (message.method === "tools/list") {
      return json(message.id, { tools: [{ name: "big", inputSchema: { type: "object" } }] });
    }
    const start = `{"jsonrpc":"2.0","id":${message.id},"result":{"content":[{"type":"text","text":"`;
    const spaces = new Uint8Array(1024 * 1024).fill(32);
    const body = new ReadableStream({
      start: (controller) => controller.enqueue(new TextEncoder().encode(start)),
      pull: (controller) => controller.enqueue(spaces),
    });
    return new Response(body, { headers: { "content-type": "application/json", "mcp-session-id": "endless" } });
  });
}

Deno.test("hostile MCP servers over HTTP: an answer that never ends is read only up to a bound, and the call ends unknown", async () => {
  await using server = endlessAnswerServer();
  const url = `http://127.0.0.1:${server.addr.port}/mcp`;
  await using brain = new Brain({ allow: { net: [`127.0.0.1:${server.addr.port}`] } });
  const session = await brain.sessions.create({ environments: [mcpEnv({ name: "endless", url })] });
  const end = await session.call("big", {}, { timeoutMs: 30_000 });
  assert.equal(code(end), "unknown");
  assert.match(end.outcome.status === "unknown" ? end.outcome.message ?? "" : "", /longer than/);
});

Deno.test("hostile mcpEnv prefixes: one no Tool name can start with is invalid_argument where it is given", () => {
  for (const prefix of ["a\r\n", "a\0", "\ud800", "x".repeat(20_000_000), "1a", "a b"]) {
    assert.throws(
      () => mcpEnv({ name: "m", url: "http://127.0.0.1:1/mcp", prefix }),
      hasCode("invalid_argument", /prefix/),
      JSON.stringify(prefix.slice(0, 8)),
    );
  }
  assert.equal(mcpEnv({ name: "m", url: "http://127.0.0.1:1/mcp", prefix: "gh_" }).name, "m");
});
