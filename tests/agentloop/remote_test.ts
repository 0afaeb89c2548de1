import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { servedBrain } from "../_support/served_brain.ts";

Deno.test("a remote Brain takes a server model by name only; without one, send and ctx.model are model_unavailable", async () => {
  const provider = new ScriptedProvider(["Welcome back."]);
  await using server = await servedBrain({
    serverToken: "operator-secret",
    models: { default: { provider, model: "m" } },
  });
  await using brain = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "remote-model-secret",
    host: "app",
  });
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
  await assert.rejects(brain.sessions.create({ tools: [ask()], model }), { code: "invalid_argument" });
  await assert.rejects(brain.sessions.create({ model: "" }), { code: "invalid_argument" });
  await assert.rejects(
    brain.sessions.create({ model: "default", agentloop: { toolDeadlineMs: "soon" as never } }),
    { code: "invalid_argument" },
  );
  await assert.rejects(brain.sessions.create({ id: "missing", model: "other" }), { code: "model_unavailable" });
  assert.equal(
    await server.journal.getSession(hostSessionKey("app", "missing")),
    undefined,
    "nothing was created for an unknown model",
  );
  assert.equal(server.connections, 1, "bad arguments were refused before they could break the connection");

  const session = await brain.sessions.create({ tools: [ask()] });
  await session.call("ask", {});
  assert.equal(refused, "model_unavailable");
  await assert.rejects(session.send("hello"), { code: "model_unavailable" });
  assert.deepEqual((await server.journal.getSession(hostSessionKey("app", session.id)))?.model, undefined);

  const chatty = await brain.sessions.create({ model: "default" });
  await chatty.end();
  const reopened = await brain.sessions.get(chatty.id, { model: "default" });
  assert.equal((await reopened.send("Back again.")).content, "Welcome back.", "get with the name restores the loop");
});
