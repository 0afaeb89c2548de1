import assert from "node:assert/strict";
import { Hono } from "hono";
import { stream } from "hono/streaming";
import { component, type ComponentOptions } from "../../mod.ts";
import { serve } from "../_support/serve.ts";
import { INSPECT, inspectTool, reader, readerBrain } from "../_support/components.ts";
import { soon } from "../_support/deadline.ts";

/** A registry stand-in serving inspect.wasm under a few paths, counting requests per path. */
async function registry() {
  const wasm = await Deno.readFile(INSPECT);
  const requests = new Map<string, number>();
  const app = new Hono();
  app.use(async (c, next) => {
    requests.set(c.req.path, (requests.get(c.req.path) ?? 0) + 1);
    await next();
  });
  app.get("/inspect.wasm", (c) => c.body(wasm, 200, { "content-type": "application/wasm" }));
  // No Content-Length: only counting the streamed bytes can stop it.
  app.get("/chunked.wasm", (c) =>
    stream(c, async (out) => {
      for (let at = 0; at < wasm.length; at += 4096) await out.write(wasm.subarray(at, at + 4096));
    }));
  // Answers headers, then never finishes the body until the client goes away.
  app.get("/stalled.wasm", (c) =>
    stream(c, async (out) => {
      await out.write(wasm.subarray(0, 16));
      await new Promise<void>((resolve) => out.onAbort(resolve));
    }));
  const server = serve(app.fetch);
  return { server, wasm, requests, at: (path: string) => new URL(path, server.url) };
}

async function createInspect(url: URL, options: ComponentOptions = {}) {
  await using brain = readerBrain();
  const implementation = component(url, options);
  return await brain.sessions.create({ tools: [inspectTool(implementation)({ env: reader, depth: 1 })] });
}

Deno.test("a Component fetched over HTTP runs, and the second session does not fetch it again", async () => {
  const { server, requests, at } = await registry();
  await using _ = server;
  const shared = component(at("/inspect.wasm"));
  const brain = readerBrain();
  try {
    for (const name of ["first", "second"]) {
      const session = await brain.sessions.create({ tools: [inspectTool(shared)({ env: reader, depth: 1 })] });
      await Deno.mkdir(`${session.workspace("reader")}/${name}`);
      const end = await session.call("inspect", { path: "." }, { deadline: soon() });
      assert.deepEqual(end.outcome, { status: "ok", value: { eventSequence: 2, entries: [`${name}/`] } });
    }
  } finally {
    await brain.close();
  }
  assert.equal(requests.get("/inspect.wasm"), 1);
});

Deno.test("a 404 fails session creation with http_error carrying the status; the next session retries", async () => {
  const { server, requests, at } = await registry();
  await using _ = server;
  const missing = component(at("/missing.wasm"));
  await using brain = readerBrain();
  for (let attempt = 1; attempt <= 2; attempt++) {
    await assert.rejects(brain.sessions.create({ tools: [inspectTool(missing)({ env: reader, depth: 1 })] }), {
      code: "http_error",
      details: { url: at("/missing.wasm").href, status: 404 },
    });
    assert.equal(requests.get("/missing.wasm"), attempt);
  }
});

Deno.test("a Component past maxBytes fails with payload_too_large, declared or streamed", async () => {
  const { server, wasm, at } = await registry();
  await using _ = server;
  for (const path of ["/inspect.wasm", "/chunked.wasm"]) {
    await assert.rejects(createInspect(at(path), { maxBytes: wasm.length - 1 }), {
      code: "payload_too_large",
      details: { url: at(path).href, maxBytes: wasm.length - 1 },
    });
    // Exactly at the limit it is admitted.
    await createInspect(at(path), { maxBytes: wasm.length });
  }
});

Deno.test("a fetch slower than fetchTimeoutMs fails with timeout", async () => {
  const { server, at } = await registry();
  await using _ = server;
  await assert.rejects(createInspect(at("/stalled.wasm"), { fetchTimeoutMs: 200 }), {
    code: "timeout",
    details: { url: at("/stalled.wasm").href, timeoutMs: 200 },
  });
});

Deno.test("a refused connection fails session creation with http_error without a status", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const url = new URL(`http://127.0.0.1:${listener.addr.port}/inspect.wasm`);
  listener.close();
  await assert.rejects(createInspect(url), (error: { code: string; details: Record<string, unknown> }) => {
    assert.equal(error.code, "http_error");
    assert.deepEqual(error.details, { url: url.href });
    return true;
  });
});

Deno.test("a local file past maxBytes fails with payload_too_large; other schemes with invalid_tool", async () => {
  const size = (await Deno.stat(INSPECT)).size;
  await assert.rejects(createInspect(INSPECT, { maxBytes: size - 1 }), { code: "payload_too_large" });
  await assert.rejects(createInspect(new URL("data:application/wasm;base64,AGFzbQ==")), {
    code: "invalid_tool",
    message: /only file:, http: and https:/,
  });
});

Deno.test("component() refuses non-positive limits", () => {
  assert.throws(() => component(INSPECT, { maxBytes: 0 }), { code: "invalid_argument" });
  assert.throws(() => component(INSPECT, { fetchTimeoutMs: -1 }), { code: "invalid_argument" });
});
