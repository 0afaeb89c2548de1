import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { faultProxy } from "../host/fault_proxy.ts";

const echo = tool({
  name: "echo",
  description: "Finishes with its input.",
  input: z.object({ n: z.number() }),
  run: ({ n }, ctx) => ctx.finish(n),
});

for (const fault of ["refuse", "blackhole"] as const) {
  Deno.test(`a remote client whose server became unreachable (${fault}) still closes`, async () => {
    const server = await serveBrain({ serverToken: "operator" });
    const proxy = faultProxy(server.url);
    const brain = new Brain({
      url: proxy.url,
      serverToken: "operator",
      token: "t",
      host: "h",
      pingIntervalMs: 200,
      maxReconnectDelayMs: 100,
    });
    let closed = false;
    try {
      const session = await brain.sessions.create({ tools: [echo()] });
      assert.equal((await session.call("echo", { n: 1 })).cause, "finish");
      // The server is unreachable from now on: links are refused, or silent.
      proxy[fault]();
      proxy.cut();
      const closing = brain.close().then(() => closed = true);
      const bound = Promise.withResolvers<void>();
      const timer = setTimeout(bound.resolve, 10_000);
      await Promise.race([closing, bound.promise]);
      clearTimeout(timer);
      assert.ok(closed, "close() returned while the server was unreachable");
    } finally {
      proxy.heal();
      proxy.cut();
      if (!closed) await brain.close();
      await proxy.close();
      await server.shutdown();
    }
  });
}
