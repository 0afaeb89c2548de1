/**
 * One HTTP round trip to a local hono server on 127.0.0.1 as a bare fetch, then
 * as a journaled Tool call: an `http_json` descriptor in an HTTP Environment, a
 * v1 http() placement, and a run function served by the Application tool
 * extension (one extra ack request per report). Run with `deno task bench`.
 */
import { Hono } from "hono";
import { z } from "zod";
import { Brain, http, httpEnv, tool } from "../mod.ts";
import { extensionEnv } from "../src/extension/extension_env.ts";
import { toolExtension } from "../src/extension/extension.ts";

const item = tool({
  name: "item",
  description: "Get one item.",
  input: z.object({ id: z.string() }),
  run: ({ id }, ctx) => ctx.finish({ id }),
});
const api = new Hono();
api.get("/items/:id", (c) => c.json({ id: c.req.param("id") }));
api.post("/score", async (c) => c.json({ id: (await c.req.json()).id }));
api.mount("/ext", toolExtension({ tools: [item()] }).fetch);
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, api.fetch);
const base = `http://127.0.0.1:${server.addr.port}`;

const descriptor = tool({
  name: "descriptor",
  description: "Get one item.",
  input: z.object({ id: z.string() }),
  implementation: () => ({ type: "http_json", method: "GET", path: "/items/{id}" }),
});
const v1 = tool({
  name: "v1",
  description: "Score one item.",
  input: z.object({ id: z.string() }),
  implementation: http(`${base}/score`),
});
const brain = new Brain({ allow: { net: ["127.0.0.1"] } });
const session = await brain.sessions.create({
  tools: [
    descriptor({ env: httpEnv({ name: "api", baseUrl: base }) }),
    v1(),
    item({ env: extensionEnv({ name: "ext", url: `${base}/ext` }) }),
  ],
});

Deno.bench("bare fetch + JSON parse", { group: "http tool", baseline: true }, async () => {
  await (await fetch(`${base}/items/a`)).json();
});

Deno.bench("http_json descriptor in an HTTP Environment", { group: "http tool" }, async () => {
  await session.call("descriptor", { id: "a" });
});

Deno.bench("v1 http() placement", { group: "http tool" }, async () => {
  await session.call("v1", { id: "a" });
});

Deno.bench("Application tool extension (report + ack)", { group: "http tool" }, async () => {
  await session.call("item", { id: "a" });
});
