import assert from "node:assert/strict";
import { Brain, brainEnv, serveBrain } from "../../mod.ts";
import { INSPECT, inspectTool, reader, soon } from "../component/helpers.ts";
import { serve } from "../support/serve.ts";

const ALLOW = { workspaceRoot: ".tmp/ws-remote", filesystem: ["read" as const] };

async function remote(body: (brain: Brain) => Promise<void>, allow = ALLOW): Promise<void> {
  const server = await serveBrain({ allow });
  const brain = new Brain({ url: server.url, token: "upload-token", host: "uploader" });
  try {
    await body(brain);
  } finally {
    await brain.close();
    await server.shutdown();
  }
}

Deno.test("a remote session runs an uploaded Component in the server's Workers and journals it", async () => {
  // The client fetches the bytes once; the server never asks for them.
  const wasm = await Deno.readFile(INSPECT);
  let requests = 0;
  await using registry = serve(() => (requests++, new Response(wasm)));
  await remote(async (brain) => {
    const session = await brain.sessions.create({
      tools: [inspectTool(new URL("/inspect.wasm", registry.url))({ env: reader, depth: 1 })],
    });
    const end = await session.call("inspect", { path: "." }, { deadline: soon() });
    const records = await session.read();
    const event = records.find((record) => record.kind === "tool_event");
    assert.equal(event?.kind === "tool_event" && event.event, "inspect_started");
    assert.deepEqual(end.outcome, { status: "ok", value: { eventSequence: event!.sequence, entries: [] } });
    assert.ok(records.some((record) => record.kind === "tool_call_finished" && record.cause === "finish"));
    // Input is validated on the server with the advertised schema.
    const bad = await session.call("inspect", { path: 7 }, { deadline: soon() });
    assert.equal(bad.outcome.status === "error" && bad.outcome.error.code, "invalid_input");
  });
  assert.equal(requests, 1);
});

Deno.test("an uploaded Component's grant outside the server's allow-list is refused with permission_denied", async () => {
  await remote(async (brain) => {
    const writer = brainEnv({ name: "writer", filesystem: { workspace: "write" } });
    await assert.rejects(brain.sessions.create({ tools: [inspectTool()({ env: writer, depth: 1 })] }), {
      code: "permission_denied",
    });
    assert.deepEqual(await brain.sessions.list(), []);
  });
  // The same placement is admitted by a server whose allow-list has write.
  await remote(async (brain) => {
    const writer = brainEnv({ name: "writer", filesystem: { workspace: "write" } });
    await brain.sessions.create({ tools: [inspectTool()({ env: writer, depth: 1 })] });
  }, { ...ALLOW, filesystem: ["read", "write"] });
});
