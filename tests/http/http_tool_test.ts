import assert from "node:assert/strict";
import { Hono } from "hono";
import { z } from "zod";
import { Brain, http, httpTool, tool } from "../../mod.ts";
import { serve } from "../_support/serve.ts";
import { hasCode } from "../_support/has_code.ts";

interface Posted {
  body: unknown;
  session: string | undefined;
  sequence: string | undefined;
  deadline: string | undefined;
  key: string | undefined;
}

function endpoint(posted: Posted[]) {
  const app = new Hono();
  app.post("/:answer", async (c) => {
    posted.push({
      body: await c.req.json(),
      session: c.req.header("brain-session-id"),
      sequence: c.req.header("brain-call-sequence"),
      deadline: c.req.header("brain-deadline"),
      key: c.req.header("x-key"),
    });
    switch (c.req.param("answer")) {
      case "score":
        return c.json({ score: 0.5 });
      case "reserved":
        return c.json({ status: "cancelled", reason: "business data" });
      case "broken":
        return c.json({ error: "boom" }, 500);
      default:
        return c.json({ unexpected: true });
    }
  });
  return app;
}

const input = z.object({ text: z.string().transform((text) => text.trim()) });

Deno.test("http(): Brain POSTs the parsed input and the plain JSON body is the ordinary output", async () => {
  const posted: Posted[] = [];
  await using server = serve(endpoint(posted).fetch);
  const score = httpTool({
    name: "score",
    description: "Score.",
    input,
    output: z.object({ score: z.number() }),
    url: `${server.url}/score`,
    headers: { "x-key": "k" },
  });
  await using brain = new Brain({ allow: { net: [server.host] } });
  const session = await brain.sessions.create({ id: "h1", tools: [score()] });
  assert.equal(session.tools[0].advertised.implementation, "http");
  const at = Date.now() + 10_000;
  const end = await session.call("score", { text: "  hi " }, { deadline: at });
  assert.deepEqual(end.outcome, { status: "ok", value: { score: 0.5 } });
  assert.equal(end.cause, "finish");
  assert.deepEqual(posted, [{
    body: { text: "hi" },
    session: "h1",
    sequence: String(end.call),
    deadline: String(at),
    key: "k",
  }]);
  const kinds = (await session.read()).map((record) => record.kind);
  assert.deepEqual(kinds, ["tool_call_started", "tool_result", "tool_call_finished"]);
});

Deno.test("http(): v1 keeps a reserved status in the body as data, validates output, and maps non-2xx", async () => {
  const posted: Posted[] = [];
  await using server = serve(endpoint(posted).fetch);
  const place = (name: string, output?: z.ZodType) =>
    tool({ name, description: name, input, output, implementation: http(`${server.url}/${name}`) })();
  await using brain = new Brain({ allow: { net: ["127.0.0.1"] } });
  const session = await brain.sessions.create({
    tools: [place("reserved"), place("broken"), place("other", z.object({ score: z.number() }))],
  });
  const reserved = await session.call("reserved", { text: "a" });
  assert.deepEqual(reserved.outcome, { status: "ok", value: { status: "cancelled", reason: "business data" } });
  const broken = (await session.call("broken", { text: "a" })).outcome;
  assert.equal(broken.status === "error" && broken.error.code, "http_error");
  assert.equal(broken.status === "error" && broken.error.retryable, true);
  const other = (await session.call("other", { text: "a" })).outcome;
  assert.equal(other.status === "error" && other.error.code, "invalid_output");
  const refused = (await session.call("other", { text: 1 })).outcome;
  assert.equal(refused.status === "error" && refused.error.code, "invalid_input");
  assert.equal(posted.length, 3, "invalid input is never posted");
});

Deno.test("http(): an endpoint outside the allow-list fails session creation; bad URLs fail at declaration", async () => {
  const score = httpTool({ name: "score", description: "Score.", input, url: "http://127.0.0.1:9/score" });
  const brain = new Brain({ allow: { net: ["127.0.0.1:8"] } });
  try {
    await assert.rejects(brain.sessions.create({ tools: [score()] }), hasCode("permission_denied"));
  } finally {
    await brain.close();
  }
  assert.throws(() => http("ftp://x.test/"), hasCode("invalid_tool"));
  assert.throws(() => http("::"), hasCode("invalid_tool"));
});
