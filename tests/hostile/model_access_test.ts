import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, httpEnv, tool } from "../../mod.ts";
import { MODEL_TOKEN_HEADER, MODEL_URL_HEADER } from "../../src/env/mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { withDeadline } from "../_support/deadline.ts";
import { serve } from "../_support/serve.ts";

Deno.test("hostile model access: a model request whose body never ends holds neither its call's end nor the session's", async () => {
  let hung: Promise<string> | undefined;
  await using endpoint = serve(async (request) => {
    const url = request.headers.get(MODEL_URL_HEADER)!;
    const authorization = `Bearer ${request.headers.get(MODEL_TOKEN_HEADER)}`;
    // A body that sends its first byte, then nothing, and never ends.
    const sending = Promise.withResolvers<void>();
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (++pulls === 1) controller.enqueue(new TextEncoder().encode("{"));
        else sending.resolve();
        return pulls === 1 ? undefined : new Promise(() => {});
      },
    });
    hung = fetch(url, { method: "POST", headers: { authorization }, body })
      .then((response) => response.text().then(() => `answered ${response.status}`), () => "connection closed");
    await sending.promise;
    // A whole request after it, answered while the first one's body is still being read.
    const asked = await fetch(url, {
      method: "POST",
      headers: { authorization },
      body: JSON.stringify({ messages: [{ role: "user", content: "q" }] }),
    });
    return Response.json({ asked: asked.status, answer: (await asked.json()).content });
  });
  const ask = tool({
    name: "ask",
    description: "Asks the session's model through its endpoint.",
    input: z.object({}),
    implementation: () => ({ type: "http_json", method: "POST", path: "/ask" }),
  });
  await using brain = new Brain({ allow: { net: [endpoint.host] } });
  const session = await brain.sessions.create({
    tools: [ask({ env: httpEnv({ name: "api", baseUrl: endpoint.url, model: true }) })],
    model: { provider: new ScriptedProvider(["hi"]), model: "m" },
  });
  assert.deepEqual((await session.call("ask", {})).outcome, { status: "ok", value: { asked: 200, answer: "hi" } });
  // The first request's read ends with its call; a graceful shutdown of the model service waited for it forever.
  await withDeadline(session.end(), "the session's end");
  assert.match(await withDeadline(hung!, "the model request's end"), /^(answered 409|connection closed)$/);
});
