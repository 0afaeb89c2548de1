import assert from "node:assert/strict";
import { type AllowList, Brain, brainEnv, component, tool } from "../../mod.ts";
import { z } from "zod";
import { INSPECT, inspectTool, reader } from "../_support/components.ts";
import { soon } from "../_support/deadline.ts";
import { serve } from "../_support/serve.ts";
import { DEFAULT_BUDGETS, rawHost } from "./raw_host.ts";
import { servedBrain } from "../_support/served_brain.ts";

const ALLOW: AllowList = { workspaceRoot: ".tmp/ws-remote", filesystem: ["read"] };

async function remote(body: (brain: Brain) => Promise<void>, allow = ALLOW): Promise<void> {
  await using server = await servedBrain({ serverToken: "operator-secret", allow });
  await using brain = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "upload-token",
    host: "uploader",
  });
  await body(brain);
}

Deno.test("a remote session runs an uploaded Component in the server's sandboxes and journals it", async () => {
  // The client fetches the bytes once for both sessions; the server never asks for them.
  const wasm = await Deno.readFile(INSPECT);
  let requests = 0;
  await using registry = serve(() => (requests++, new Response(wasm)));
  const shared = component(new URL("/inspect.wasm", registry.url));
  await remote(async (brain) => {
    await brain.sessions.create({ tools: [inspectTool(shared)({ env: reader, depth: 1 })] });
    const session = await brain.sessions.create({ tools: [inspectTool(shared)({ env: reader, depth: 1 })] });
    const end = await session.call("inspect", { path: "." }, { deadline: soon() });
    const records = await session.read();
    const event = records.find((record) => record.kind === "tool_event");
    assert.equal(event?.kind === "tool_event" && event.event, "inspect_started");
    assert.deepEqual(end.outcome, { status: "ok", value: { eventSequence: event!.sequence, entries: [] } });
    assert.ok(records.some((record) => record.kind === "tool_call_finished" && record.cause === "finish"));
    // Input is validated by the client's schema, over the connection.
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

Deno.test("uploads are kept by content hash per host: bytes travel once, another host sends its own", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret", allow: ALLOW });
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", await Deno.readFile(INSPECT))).toHex();
  const placed = inspectTool()({ env: reader, depth: 1 });
  const create = (id: number, session: string) =>
    JSON.stringify({
      id,
      op: "create",
      handle: `h-${session}`,
      session,
      tools: [placed.advertised],
      uploads: [{
        tool: "inspect",
        url: INSPECT.href,
        sha256: hash,
        env: { name: "reader", grant: reader.grant },
        options: { depth: 1 },
      }],
    });
  const brain = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "upload-token",
    host: "uploader",
  });
  await brain.sessions.create({ id: "first", tools: [placed] }).finally(() => brain.close());
  for (
    const [host, lacking, reply] of [["uploader", [], { value: DEFAULT_BUDGETS }], [
      "other",
      [hash],
      undefined,
    ]] as const
  ) {
    const raw = await rawHost(server.url, host, "upload-token");
    try {
      raw.socket.send(JSON.stringify({ id: 1, op: "lacking", sha256: [hash] }));
      assert.deepEqual(await raw.next(), { t: "reply", id: 1, value: lacking });
      raw.socket.send(create(2, `without-bytes-${host}`));
      const answer = await raw.next() as { value?: unknown; error?: { code: string } };
      if (reply) assert.deepEqual(answer, { t: "reply", id: 2, ...reply });
      else assert.equal(answer.error?.code, "protocol_error");
    } finally {
      raw.socket.close();
      await raw.closed;
    }
  }
});

Deno.test("an uploaded Component's input and output are parsed by the client's Zod schemas: defaults, transforms, async checks, stripping, and the deadline", async () => {
  const checked: string[] = [];
  const slow = Promise.withResolvers<void>();
  const zodInspect = tool({
    name: "inspect",
    description: "Inspect one path.",
    input: z.object({ path: z.string().default(" . ").transform((path) => path.trim()) }).refine(async ({ path }) => {
      checked.push(path);
      if (path === "slow") await slow.promise;
      return path !== "forbidden";
    }, "that path is forbidden"),
    output: z.object({
      eventSequence: z.number().int(),
      entries: z.array(z.string()).overwrite((entries) => [...entries, "seen by the client"]),
    }),
    options: z.object({ depth: z.number().int().positive() }),
    implementation: component(INSPECT),
  });
  await remote(async (brain) => {
    const session = await brain.sessions.create({ tools: [zodInspect({ env: reader, depth: 1 })] });
    const end = await session.call("inspect", { extra: "stripped" }, { deadline: soon() });
    assert.equal(end.outcome.status, "ok");
    assert.deepEqual(end.outcome.status === "ok" && end.outcome.value, {
      eventSequence: end.call + 1,
      entries: ["seen by the client"],
    });
    const refused = await session.call("inspect", { path: "forbidden" }, { deadline: soon() });
    assert.equal(refused.outcome.status === "error" && refused.outcome.error.code, "invalid_input");
    assert.match(refused.outcome.status === "error" ? refused.outcome.error.message : "", /that path is forbidden/);
    const late = await session.call("inspect", { path: "slow" }, { deadline: Date.now() + 100 });
    assert.equal(late.cause, "timeout", "an async check waiting past the deadline ends the call timeout");
    slow.resolve();
    assert.deepEqual(checked, [".", "forbidden", "slow"], "the client's refinement ran for every call");
  });
});
