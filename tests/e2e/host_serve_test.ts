import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { spawnDeno } from "./child.ts";

Deno.test("the serve entry point runs a Brain server process that hosts a client's Tools", async () => {
  const server = spawnDeno("src/http/serve.ts", ["--port", "0"], [
    "--allow-net=127.0.0.1",
    "--allow-env=BRAIN_PORT,BRAIN_PATH",
  ]);
  try {
    const url = /^Brain listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(await server.line() ?? "")?.[1];
    assert.ok(url, "the server printed its URL");
    const refused = await fetch(`${url}/v1/host?host=app`, { headers: { upgrade: "websocket" } });
    await refused.body?.cancel();
    assert.equal(refused.status, 401);

    const greet = tool({
      name: "greet",
      description: "Greets.",
      input: z.object({ name: z.string() }),
      run: ({ name }, ctx) => ctx.finish({ text: `hello ${name}`, pid: Deno.pid }),
    });
    const brain = new Brain({ url, token: "serve-token", host: "app" });
    try {
      const session = await brain.sessions.create({ tools: [greet()] });
      const end = await session.call("greet", { name: "Ada" });
      assert.deepEqual(
        end.outcome,
        { status: "ok", value: { text: "hello Ada", pid: Deno.pid } },
        "it ran in this process",
      );
    } finally {
      await brain.close();
    }
  } finally {
    server.process.kill("SIGTERM");
    assert.equal((await server.process.status).code, 0, "SIGTERM shuts the server down cleanly");
  }
});
