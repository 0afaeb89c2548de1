import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, ScriptedProvider, serveBrain, tool } from "../../mod.ts";

Deno.test("a remote Brain refuses a session model, ctx.model in host Tools, and send, with model_unavailable", async () => {
  const server = await serveBrain();
  const brain = new Brain({ url: server.url, token: "remote-model-secret", host: "app" });
  try {
    let refused = "";
    const ask = tool({
      name: "ask",
      description: "Tries the model.",
      input: z.object({}),
      run: async (_input, ctx) => {
        refused = await ctx.model({ messages: [{ role: "user", content: "hi" }] }).then(
          () => "answered",
          (error) => error.code,
        );
        return ctx.finish(null);
      },
    });
    const model = { provider: new ScriptedProvider([]), model: "m" };
    await assert.rejects(brain.sessions.create({ tools: [ask()], model }), { code: "model_unavailable" });
    const session = await brain.sessions.create({ tools: [ask()] });
    await session.call("ask", {});
    assert.equal(refused, "model_unavailable");
    await assert.rejects(session.send("hello"), { code: "model_unavailable" });
  } finally {
    await brain.close();
    await server.shutdown();
  }
});
