import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type CallEnd, http, httpEnv, tool } from "../../mod.ts";
import { extensionEnv, toolExtension } from "../../src/extension/mod.ts";
import { serve } from "../_support/serve.ts";
import { hasCode } from "../_support/has_code.ts";
import { extensionService } from "../_support/extension_service.ts";

const remote = tool({
  name: "remote",
  description: "Runs in the extension.",
  input: z.object({}),
  run: (_, ctx) => ctx.finish("done"),
});

/** An extension server answering every call with `answer`, counting the calls it was sent. */
function extension(answer: (request: Request) => Response) {
  const seen = { calls: 0 };
  const server = serve((request) => {
    if (new URL(request.url).pathname.endsWith("/acks")) return new Response(null, { status: 204 });
    seen.calls++;
    return answer(request);
  });
  return Object.assign(server, { seen });
}

/** Calls the extension Tool once, with no deadline: only Brain itself may end the call. */
async function callExtension(answer: (request: Request) => Response) {
  await using server = extension(answer);
  await using brain = new Brain({ allow: { net: [server.host] } });
  const session = await brain.sessions.create({
    tools: [remote({ env: extensionEnv({ name: "app", url: server.url }) })],
  });
  const end = await session.call("remote", {});
  const records = await session.read();
  const finished = records.filter((record) => record.kind === "tool_call_finished").length;
  return { end, calls: server.seen.calls, finished, records };
}

const code = ({ outcome }: CallEnd) => outcome.status === "error" ? outcome.error.code : outcome.status;

Deno.test("hostile extension: a refusal with a malformed error ends the call protocol_error at once, never left open", async () => {
  for (
    const error of [
      { code: 5, message: "m" },
      { code: "x", message: { a: 1 } },
      { code: "", message: "m" },
      "text",
      null,
    ]
  ) {
    const { end, finished } = await callExtension(() => Response.json({ error }, { status: 500 }));
    assert.equal(end.cause, "error", JSON.stringify(error));
    assert.equal(code(end), "protocol_error", JSON.stringify(error));
    assert.equal(finished, 1);
  }
  const { end } = await callExtension(() =>
    Response.json({ error: { code: "busy", message: "later" } }, { status: 503 })
  );
  assert.equal(code(end), "busy", "a well-formed refusal keeps its code");
});

Deno.test("hostile extension: an endless refusal body is read only up to a bound, then the call ends", async () => {
  let sent = 0;
  const { end } = await callExtension(() =>
    new Response(
      new ReadableStream({
        pull(controller) {
          if (sent > 64 * 1024 * 1024) return controller.close();
          sent += 65_536;
          controller.enqueue(new Uint8Array(65_536).fill(120));
        },
      }),
      { status: 500 },
    )
  );
  assert.equal(code(end), "protocol_error");
  assert.ok(sent < 8 * 1024 * 1024, `Brain read ${sent} bytes of a refusal`);
});

Deno.test("hostile extension: lines that are not reports end the call protocol_error", async () => {
  for (
    const body of [
      "<html>hi</html>\n",
      "[1,2]\n",
      "null\n",
      '{"id":1}\n',
      "[".repeat(100_000) + "]".repeat(100_000) + "\n",
    ]
  ) {
    const { end, finished } = await callExtension(() => new Response(body));
    assert.equal(code(end), "protocol_error", body.slice(0, 20));
    assert.equal(finished, 1);
  }
  const { end } = await callExtension(() => new Response(new Uint8Array([0xff, 0xfe, 0x0a])));
  assert.equal(code(end), "protocol_error", "invalid UTF-8");
});

Deno.test("hostile extension: a report with content but no outcome is refused: a finish ends the call protocol_error", async () => {
  const finish = JSON.stringify({ type: "finish", id: 1, content: "All done.", cause: "finish" });
  const finished = await callExtension(() => new Response(`${finish}\n`));
  assert.deepEqual([finished.end.cause, code(finished.end), finished.finished], ["error", "protocol_error", 1]);
  // A refused returned report commits nothing; the response then ends without a finish.
  const returned = JSON.stringify({ type: "returned", id: 1, content: "All done." });
  const open = await callExtension(() => new Response(`${returned}\n`));
  assert.deepEqual([open.end.cause, open.finished], ["unknown", 1]);
  assert.equal(open.records.some((record) => record.kind === "tool_returned"), false);
});

Deno.test("hostile extension options: options that are not JSON are refused where they are given, and nothing is sent", async () => {
  const dated = tool({
    name: "dated",
    description: "Options parsed into a Date.",
    input: z.object({}),
    options: z.object({ since: z.string().transform((text) => new Date(text)) }),
    run: (_, ctx) => ctx.finish("done"),
  });
  assert.throws(() => toolExtension({ tools: [dated({ since: "2026-01-01" })] }), hasCode("invalid_options"));
  await using server = extension(() => new Response(null, { status: 500 }));
  await using brain = new Brain({ allow: { net: [server.host] } });
  const session = await brain.sessions.create({
    tools: [dated({ env: extensionEnv({ name: "app", url: server.url }), since: "2026-01-01" })],
  });
  const end = await session.call("dated", {});
  assert.deepEqual([end.cause, code(end)], ["error", "invalid_options"]);
  assert.equal(server.seen.calls, 0, "a call whose options cannot travel is never sent");
});

Deno.test("extension options: an optional option given as undefined is one not given, and key order does not matter", async () => {
  const tagged = tool({
    name: "tagged",
    description: "Finishes with its options.",
    input: z.object({}),
    options: z.object({ tag: z.string().optional(), meta: z.object({ a: z.number(), b: z.number() }) }),
    run: (_, ctx) => ctx.finish(ctx.options),
  });
  await using service = extensionService([tagged({ meta: { a: 1, b: 2 } })]);
  await using brain = new Brain({ allow: service.allow });
  const session = await brain.sessions.create({
    tools: [tagged({ env: service.env, tag: undefined, meta: { b: 2, a: 1 } })],
  });
  const end = await session.call("tagged", {});
  assert.deepEqual(end.outcome, { status: "ok", value: { meta: { a: 1, b: 2 } } });
});

Deno.test("hostile extension: a redirect is never followed, so a call is sent once and nowhere else", async () => {
  await using elsewhere = extension(() => new Response("{}"));
  const away = await callExtension(() => new Response(null, { status: 302, headers: { location: elsewhere.url } }));
  assert.equal(away.end.cause, "error");
  assert.equal(elsewhere.seen.calls, 0, "the redirect target was not called");
  const self = await callExtension((request) =>
    new Response(null, { status: 307, headers: { location: request.url } })
  );
  assert.equal(self.calls, 1, "a 307 to itself did not send the call again");
  assert.equal(self.end.cause, "error");
});

Deno.test("hostile http_json and http(): a redirect is an http_error, never followed past the grant", async () => {
  await using elsewhere = extension(() => Response.json({ secret: true }));
  await using redirecting = extension((request) =>
    new Response(null, {
      status: new URL(request.url).pathname.endsWith("again") ? 307 : 302,
      headers: { location: new URL(new URL(request.url).pathname, elsewhere.url).href },
    })
  );
  const fetchIt = tool({
    name: "fetch_it",
    description: "One GET.",
    input: z.object({}),
    implementation: () => ({ type: "http_json", method: "GET", path: "/x" }),
  });
  const postIt = tool({
    name: "post_it",
    description: "One POST.",
    input: z.object({}),
    implementation: http(`${redirecting.url}/again`),
  });
  await using brain = new Brain({ allow: { net: [redirecting.host] } });
  const env = httpEnv({ name: "api", baseUrl: redirecting.url });
  const session = await brain.sessions.create({ tools: [fetchIt({ env }), postIt()] });
  for (const name of ["fetch_it", "post_it"]) {
    const end = await session.call(name, {});
    assert.equal(code(end), "http_error", name);
  }
  assert.equal(elsewhere.seen.calls, 0, "no request left the granted host");
  assert.equal(redirecting.seen.calls, 2, "each call was sent once");
});

Deno.test("hostile HTTP options: credentials in URLs and header values with CR or LF are refused where given", () => {
  const refusals: [string, () => unknown][] = [
    ["httpEnv userinfo", () => httpEnv({ name: "a", baseUrl: "http://user:pass@127.0.0.1:1" })],
    ["httpEnv header CRLF", () => httpEnv({ name: "a", baseUrl: "http://127.0.0.1:1", headers: { x: "a\r\nb: c" } })],
    ["httpEnv header name", () => httpEnv({ name: "a", baseUrl: "http://127.0.0.1:1", headers: { "a b": "c" } })],
    ["httpEnv header number", () => httpEnv({ name: "a", baseUrl: "http://127.0.0.1:1", headers: { x: 5 as never } })],
    ["extensionEnv userinfo", () => extensionEnv({ name: "a", url: "http://u:p@127.0.0.1:1" })],
    ["extensionEnv token LF", () => extensionEnv({ name: "a", url: "http://127.0.0.1:1", token: "a\nb" })],
    ["extensionEnv token 5", () => extensionEnv({ name: "a", url: "http://127.0.0.1:1", token: 5 as never })],
  ];
  for (const [what, attempt] of refusals) assert.throws(attempt, hasCode("invalid_argument"), what);
  assert.throws(() => http("http://u:p@127.0.0.1:1"), hasCode("invalid_tool"));
  assert.throws(() => http("http://127.0.0.1:1", { headers: { x: "a\nb" } }), hasCode("invalid_argument"));
});

Deno.test("hostile extension requests: malformed calls are JSON refusals with codes; a long lifetime still waits for the Tool", async () => {
  const slow = tool({
    name: "slow",
    description: "Finishes after a moment.",
    input: z.object({}),
    run: async (_, ctx) => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      return ctx.finish("done");
    },
  });
  const app = toolExtension({ tools: [slow()], lifetimeMs: 1e12 });
  const post = (body: string, path = "/calls") => app.fetch(new Request(`http://x${path}`, { method: "POST", body }));
  const invocation = { sessionId: "s", sequence: 1, tool: "slow", input: {}, options: {} };
  const refusals: [string, number, string][] = [
    ["{not json", 400, "invalid_argument"],
    ["[]", 400, "invalid_argument"],
    [JSON.stringify({ ...invocation, sequence: 1.5 }), 400, "invalid_argument"],
    [JSON.stringify({ ...invocation, tool: "__proto__" }), 404, "unknown_tool"],
    [JSON.stringify({ ...invocation, input: JSON.parse("[".repeat(300) + "]".repeat(300)) }), 400, "invalid_argument"],
    [JSON.stringify({ ...invocation, options: undefined }), 400, "invalid_argument"],
    [JSON.stringify({ ...invocation, options: [] }), 400, "invalid_argument"],
    [JSON.stringify({ ...invocation, options: "{}" }), 400, "invalid_argument"],
    [JSON.stringify({ ...invocation, options: { verbose: true } }), 400, "invalid_options"],
  ];
  for (const [body, status, expected] of refusals) {
    const response = await post(body);
    assert.equal(response.status, status, body.slice(0, 30));
    assert.equal((await response.json()).error.code, expected, body.slice(0, 30));
  }
  const ack = await post(JSON.stringify({ sessionId: "s", call: 1, report: "x" }), "/calls/acks");
  assert.equal(ack.status, 404);
  await ack.body?.cancel();
  const response = await post(JSON.stringify(invocation));
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const { value: line } = await reader.read();
  const report = JSON.parse(line!.trim());
  assert.equal(report.type, "finish", "the call ran to its finish instead of expiring at once");
  const acked = await post(JSON.stringify({ sessionId: "s", call: 1, report: report.id, sequence: 2 }), "/calls/acks");
  assert.equal(acked.status, 204);
  await acked.body?.cancel();
  while (!(await reader.read()).done);
  assert.throws(() => toolExtension({ tools: [new Proxy({}, {})] as never }), hasCode("invalid_tool"));
});
