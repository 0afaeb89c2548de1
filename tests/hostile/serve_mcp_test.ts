import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { serveMcp } from "../../src/mcp/mod.ts";

const echo = tool({
  name: "echo",
  description: "Echoes s.",
  input: z.object({ s: z.string() }),
  run: (input, ctx) => ctx.finish(input.s),
});
const accept = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const rpc = (id: number, method: string, params: unknown) => JSON.stringify({ jsonrpc: "2.0", id, method, params });

/** The JSON-RPC message of an answer, sent as JSON or as one server-sent event. */
async function message(response: Response): Promise<{ result?: Record<string, unknown>; error?: { code: number } }> {
  const text = await response.text();
  return JSON.parse(text.startsWith("event:") ? text.split("\ndata: ")[1].split("\n")[0] : text);
}

Deno.test("hostile MCP clients of serveMcp: malformed calls and task ttls a timer cannot keep are JSON-RPC errors, no call started", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [echo()] });
  const mcp = serveMcp(session);
  try {
    const init = await mcp.fetch(
      new Request("http://127.0.0.1/mcp", {
        method: "POST",
        headers: accept,
        body: rpc(0, "initialize", {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "hostile", version: "1" },
        }),
      }),
    );
    await init.body?.cancel();
    const headers = {
      ...accept,
      "mcp-session-id": init.headers.get("mcp-session-id")!,
      "mcp-protocol-version": "2025-06-18",
    };
    const call = async (id: number, params: unknown) =>
      await message(
        await mcp.fetch(
          new Request("http://127.0.0.1/mcp", { method: "POST", headers, body: rpc(id, "tools/call", params) }),
        ),
      );
    const refused: [string, unknown][] = [
      ["a task ttl of -1", { name: "echo", arguments: { s: "a" }, task: { ttl: -1 } }],
      ["a task ttl of 0", { name: "echo", arguments: { s: "a" }, task: { ttl: 0 } }],
      ["a task ttl of 1e308", { name: "echo", arguments: { s: "a" }, task: { ttl: 1e308 } }],
      ["a task ttl of 1.5", { name: "echo", arguments: { s: "a" }, task: { ttl: 1.5 } }],
      ["a task ttl of 2^31", { name: "echo", arguments: { s: "a" }, task: { ttl: 2 ** 31 } }],
      ["a tool named __proto__", { name: "__proto__", arguments: {} }],
      ["a tool named constructor", { name: "constructor", arguments: {} }],
      ["arguments of a string", { name: "echo", arguments: "s" }],
    ];
    for (const [index, [what, params]] of refused.entries()) {
      const answer = await call(index + 1, params);
      assert.ok(answer.error, `${what}: ${JSON.stringify(answer).slice(0, 200)}`);
    }
    let deep: unknown = "s";
    for (let level = 0; level < 10_000; level++) deep = [deep];
    const tooDeep = await call(50, { name: "echo", arguments: { s: deep } });
    assert.deepEqual(
      [tooDeep.error?.code, (tooDeep.error as { data?: unknown })?.data],
      [-32602, { code: "invalid_input" }],
      "arguments Brain cannot keep are the client's invalid params",
    );
    assert.equal((await session.read()).length, 0, "no refused call was started");
    const kept = await call(100, { name: "echo", arguments: { s: "a" }, task: { ttl: 60_000 } });
    assert.equal((kept.result?.task as { ttl: number }).ttl, 60_000, "a ttl a timer can keep is kept");
  } finally {
    await mcp.close();
  }
});

Deno.test("hostile MCP clients of serveMcp: bodies that never end hold no session slot; one too large is refused 413", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [echo()] });
  const mcp = serveMcp(session, { maxSessions: 1 });
  const post = (body: BodyInit) =>
    mcp.fetch(
      new Request("http://127.0.0.1/mcp", { method: "POST", headers: accept, body, duplex: "half" } as RequestInit),
    );
  const endless: ReadableStreamDefaultController<Uint8Array>[] = [];
  const stalled = [1, 2].map(() =>
    post(new ReadableStream({ start: (controller) => void endless.push(controller) })).then((response) =>
      response.status
    )
  );
  try {
    // Each reserved the only slot while its body was read: the client that sends a whole request was refused 429.
    const init = await post(rpc(0, "initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "patient", version: "1" },
    }));
    assert.equal(init.status, 200);
    assert.ok(init.headers.get("mcp-session-id"));
    await init.body?.cancel();
    const large = await post("x".repeat(9 * 1024 * 1024));
    assert.equal(large.status, 413);
    assert.equal((await message(large)).error?.code, -32700);
  } finally {
    for (const controller of endless) controller.error(new Error("the client went away"));
    assert.deepEqual(await Promise.all(stalled), [400, 400]);
    await mcp.close();
  }
});
