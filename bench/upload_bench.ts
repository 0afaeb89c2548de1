/**
 * Creating a session that places the inspect Component: embedded (read +
 * transpile + probe Worker each time for a new Component object) against a
 * remote Brain over the loopback WebSocket, where the server keeps uploads by
 * content hash and a new Component object costs a read, a hash and a `lacking`
 * round trip instead of a transpile.
 *
 *   deno task bench
 */
import { z } from "zod";
import { Brain, brainEnv, component, serveBrain, tool } from "../mod.ts";

const INSPECT = new URL("../examples/inspect/inspect.wasm", import.meta.url);
const reader = brainEnv({ name: "reader", filesystem: { workspace: "read" } });
const allow = { workspaceRoot: ".tmp/bench-upload-ws", filesystem: ["read" as const] };
const inspect = (implementation = component(INSPECT)) =>
  tool({
    name: "inspect",
    description: "Inspect one path.",
    input: z.object({ path: z.string() }),
    options: z.object({ depth: z.number().int().positive() }),
    implementation,
  })({ env: reader, depth: 1 });

const embedded = new Brain({ allow });
const server = await serveBrain({ serverToken: "operator-secret", allow });
const remote = new Brain({ url: server.url, serverToken: "operator-secret", token: "bench-token", host: "bench" });
const shared = component(INSPECT);
await (await remote.sessions.create({ tools: [inspect(shared)] })).end();

Deno.bench("create: embedded, new Component object", { group: "create", baseline: true }, async () => {
  await (await embedded.sessions.create({ tools: [inspect()] })).end();
});

Deno.bench("create: remote, new Component object (server has the hash)", { group: "create" }, async () => {
  await (await remote.sessions.create({ tools: [inspect()] })).end();
});

Deno.bench("create: remote, same Component object", { group: "create" }, async () => {
  await (await remote.sessions.create({ tools: [inspect(shared)] })).end();
});

globalThis.addEventListener("unload", () => {
  void embedded.close();
  void remote.close().then(() => server.shutdown());
});
