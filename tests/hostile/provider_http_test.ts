import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, openAICompatible, tool } from "../../mod.ts";
import { ofKind, until } from "../_support/until.ts";
import { withDeadline } from "../_support/deadline.ts";

const encoder = new TextEncoder();
const sse = (...events: (string | Record<string, unknown>)[]) =>
  events.map((event) => `data: ${typeof event === "string" ? event : JSON.stringify(event)}\n\n`).join("");
const eventStream = (body: BodyInit) => new Response(body, { headers: { "content-type": "text/event-stream" } });
const delta = (value: Record<string, unknown>, finish_reason: string | null = null) => ({
  choices: [{ index: 0, delta: value, finish_reason }],
});
const toolCall = (index: number, id: string, args = "{}") => ({
  index,
  id,
  type: "function",
  function: { name: "probe", arguments: args },
});
const good = () => Response.json({ choices: [{ message: { content: "fine" }, finish_reason: "stop" }] });
/** A body that never ends: `piece` over and over. */
const endless = (piece: Uint8Array) => new ReadableStream({ pull: (controller) => controller.enqueue(piece) });

/**
 * A chat-completions server on 127.0.0.1 that answers each request with the next
 * of `answers`, then with `fine`; `/elsewhere` counts the requests a redirect would send there.
 */
function hostileProvider(answers: (() => Response | Promise<Response>)[]) {
  const queue = [...answers];
  const seen = { elsewhere: 0, requests: 0 };
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
    onError: () => new Response(null, { status: 500 }),
  }, async (request) => {
    await request.body?.cancel();
    if (new URL(request.url).pathname === "/elsewhere") {
      seen.elsewhere++;
      return good();
    }
    seen.requests++;
    return (queue.shift() ?? good)();
  });
  return {
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1/`,
    seen,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

let probes = 0;
const probe = tool({
  name: "probe",
  description: "Counts its starts.",
  input: z.object({}),
  run: (_input, ctx) => {
    probes++;
    return ctx.finish("probed");
  },
});

/** The outcome a `model_call_finished` keeps for a failure thrown with `code`. */
function journaled(code: string): Record<string, unknown> {
  if (code === "timeout") return { status: "timeout" };
  if (code === "connection_lost") return { status: "unknown" };
  return { status: "error", code };
}

const hostile: [string, boolean, string, () => Response | Promise<Response>][] = [
  ["an HTML page", false, "protocol_error", () => new Response("<html>busy</html>", { status: 200 })],
  ["a JSON array", false, "protocol_error", () => Response.json([])],
  ["JSON null", false, "protocol_error", () => Response.json(null)],
  ["no choices", false, "protocol_error", () => Response.json({ choices: [] })],
  ["a message that is a string", false, "protocol_error", () => Response.json({ choices: [{ message: "hi" }] })],
  [
    "content that is a number",
    false,
    "protocol_error",
    () => Response.json({ choices: [{ message: { content: 5 } }] }),
  ],
  ["negative usage", false, "protocol_error", () =>
    Response.json({
      choices: [{ message: { content: "x" } }],
      usage: { prompt_tokens: -1, completion_tokens: 1 },
    })],
  ["fractional usage", false, "protocol_error", () =>
    Response.json({
      choices: [{ message: { content: "x" } }],
      usage: { prompt_tokens: 1.5, completion_tokens: 1 },
    })],
  [
    "a 200 whose body is an error",
    false,
    "model_error",
    () => Response.json({ error: { message: "overloaded", code: "server_busy" } }),
  ],
  ["two tool calls with one id", false, "protocol_error", () =>
    Response.json({
      choices: [{
        message: {
          tool_calls: [
            { id: "same", type: "function", function: { name: "probe", arguments: "{}" } },
            { id: "same", type: "function", function: { name: "probe", arguments: "{}" } },
          ],
        },
        finish_reason: "tool_calls",
      }],
    })],
  ["a redirect", false, "model_error", () => new Response(null, { status: 307, headers: { location: "/elsewhere" } })],
  [
    "a body that never ends",
    false,
    "payload_too_large",
    () =>
      new Response(endless(new Uint8Array(64 * 1024).fill(32)), { headers: { "content-type": "application/json" } }),
  ],
  ["a body that drips a byte at a time", false, "timeout", () =>
    new Response(
      new ReadableStream({
        async pull(controller) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          controller.enqueue(encoder.encode(" "));
        },
      }),
      { headers: { "content-type": "application/json" } },
    )],
  ["an event that is not JSON", true, "protocol_error", () => eventStream("data: {nope\n\n")],
  ["an event that is not a chunk", true, "protocol_error", () => eventStream(sse({ choices: "many" }))],
  ["events without data", true, "connection_lost", () => eventStream("event: x\n\nid: 3\n\n: comment\n\nretry: 1\n\n")],
  ["an error event", true, "model_error", () => eventStream(sse({ error: { message: "quota" } }))],
  [
    "streamed tool calls with one id",
    true,
    "protocol_error",
    () => eventStream(sse(delta({ tool_calls: [toolCall(0, "same"), toolCall(1, "same")] }, "tool_calls"), "[DONE]")),
  ],
  [
    "a stream that never ends",
    true,
    "payload_too_large",
    () => eventStream(endless(encoder.encode(sse(delta({ content: "x".repeat(8 * 1024) }))))),
  ],
  [
    "one line that never ends",
    true,
    "payload_too_large",
    () => eventStream(endless(new Uint8Array(64 * 1024).fill(97))),
  ],
  ["a stream cut mid-event", true, "connection_lost", () => eventStream('data: {"choices":[{"delta":{"content":"hal')],
];

Deno.test("hostile provider answers end the model call with its code journaled, start no Tool, and the session answers next", async () => {
  await using server = hostileProvider(hostile.flatMap(([, , , answer]) => [answer, good]));
  const failures: string[] = [];
  for (const [what, stream, code] of hostile) {
    await using brain = new Brain();
    const provider = openAICompatible({ baseUrl: server.baseUrl, stream, timeoutMs: 1_000, maxResponseBytes: 1 << 20 });
    const session = await brain.sessions.create({ tools: [probe()], model: { provider, model: "m" } });
    const started = probes;
    const error = await withDeadline(session.send("hi").then(() => undefined, (error) => error), what);
    if (!(error instanceof BrainError) || error.code !== code) failures.push(`${what}: ${error?.code ?? error}`);
    const records = await session.read();
    const [finished, ...more] = ofKind(records, "model_call_finished");
    assert.equal(more.length, 0, what);
    const { status, error: failure } = finished.outcome as { status: string; error?: { code: string } };
    assert.deepEqual({ status, ...(failure ? { code: failure.code } : {}) }, journaled(code), what);
    assert.equal(probes, started, `${what}: a Tool started`);
    assert.equal(ofKind(records, "assistant_message").length, 0, `${what}: a half turn was committed`);
    assert.equal((await session.send("again")).content, "fine", `${what}: the session does not answer`);
  }
  assert.deepEqual(failures, []);
  assert.equal(server.seen.elsewhere, 0, "a redirect was followed with the request");
});

Deno.test("hostile streamed tool calls: huge, negative and sparse indexes are assembled in order without a long loop", async () => {
  await using server = hostileProvider([
    () =>
      eventStream(sse(
        delta({ tool_calls: [toolCall(2 ** 31, "c", "{}"), toolCall(-1, "a", "{}")] }),
        delta({ tool_calls: [toolCall(7, "b", "{")] }, "tool_calls"),
        "[DONE]",
      )),
  ]);
  await using brain = new Brain();
  const provider = openAICompatible({ baseUrl: server.baseUrl, stream: true, timeoutMs: 2_000 });
  const session = await brain.sessions.create({ tools: [probe()], model: { provider, model: "m" } });
  const started = probes;
  assert.equal((await withDeadline(session.send("hi"), "the turn", 3_000)).content, "fine");
  const [asked] = ofKind(await session.read(), "assistant_message");
  assert.deepEqual(asked.toolCalls.map(({ id, error }) => [id, error?.code]), [
    ["a", undefined],
    ["b", "invalid_tool_call"],
    ["c", undefined],
  ]);
  assert.equal(probes - started, 2, "the two well-formed calls ran, the malformed one did not");
});

Deno.test("hostile provider: an unknown finish reason is kept verbatim and the reply stands", async () => {
  await using server = hostileProvider([
    () => Response.json({ choices: [{ message: { content: "odd" }, finish_reason: "banana" }] }),
  ]);
  await using brain = new Brain();
  const session = await brain.sessions.create({
    model: { provider: openAICompatible({ baseUrl: server.baseUrl }), model: "m" },
  });
  assert.equal((await session.send("hi")).content, "odd");
  const [finished] = ofKind(await session.read(), "model_call_finished");
  assert.equal((finished.outcome as unknown as { value: { stopReason: string } }).value.stopReason, "banana");
});

Deno.test("hostile provider: a connection closed mid-stream ends the call unknown, and an interrupt stops a dripping body at once", async () => {
  using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const served = (async () => {
    for (const answer of ["cut", "drip"]) {
      const connection = await listener.accept();
      await connection.read(new Uint8Array(64 * 1024));
      const head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
      const first = sse(delta({ content: "par" }));
      await connection.write(encoder.encode(`${head}${first.length.toString(16)}\r\n${first}\r\n`));
      if (answer === "cut") {
        await connection.write(encoder.encode("40\r\ndata: {"));
        connection.close();
        continue;
      }
      // Drips until the client goes away.
      try {
        for (;;) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          await connection.write(encoder.encode("1\r\n \r\n"));
        }
      } catch {
        connection.close();
      }
    }
  })();
  const baseUrl = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/v1/`;
  await using brain = new Brain();
  const provider = openAICompatible({ baseUrl, stream: true, timeoutMs: 60_000 });
  const session = await brain.sessions.create({ model: { provider, model: "m" } });
  const cut = await session.send("hi").then(() => undefined, (error) => error);
  assert.ok(cut instanceof BrainError && cut.code === "connection_lost", String(cut));
  const dripping = session.send("again").then(() => undefined, (error) => error);
  await until(session, (records) => ofKind(records, "assistant_delta").length === 2, "the second call's delta");
  session.interrupt();
  const stopped = await withDeadline(dripping, "the interrupted turn", 3_000);
  assert.ok(stopped instanceof BrainError, String(stopped));
  const finished = ofKind(await session.read(), "model_call_finished");
  assert.deepEqual(finished.map(({ outcome }) => outcome.status), ["unknown", "unknown"]);
  await withDeadline(served, "the raw server's end", 3_000);
});

Deno.test("hostile openAICompatible options: bad limits and header values are refused invalid_argument", () => {
  const baseUrl = "http://127.0.0.1:9/v1/";
  for (
    const options of [
      { baseUrl, maxResponseBytes: 0 },
      { baseUrl, maxResponseBytes: -1 },
      { baseUrl, maxResponseBytes: 1.5 },
      { baseUrl, maxResponseBytes: NaN },
      { baseUrl, maxResponseBytes: "1" },
      { baseUrl, timeoutMs: -0 },
      { baseUrl, timeoutMs: 1e308 },
      { baseUrl, headers: { "x-a": "中文" } },
      { baseUrl, headers: { "x-a": "\ud800" } },
      { baseUrl, headers: { "x-a": "a\r\nb: c" } },
    ]
  ) {
    assert.throws(
      () => openAICompatible(options as never),
      (error) => error instanceof BrainError && error.code === "invalid_argument",
      JSON.stringify(options),
    );
  }
});

Deno.test("hostile model credentials: an apiKey that cannot be a header is refused before anything is sent", async () => {
  await using server = hostileProvider([]);
  for (const apiKey of ["key\r\nx-injected: 1", "ключ", "\ud800", 7]) {
    await using brain = new Brain();
    const provider = openAICompatible({ baseUrl: server.baseUrl });
    const session = await brain.sessions.create({ model: { provider, model: "m", credentials: { apiKey } as never } });
    const error = await session.send("hi").then(() => undefined, (error) => error);
    assert.ok(error instanceof BrainError && error.code === "invalid_argument", `${String(apiKey)}: ${error}`);
    const [finished] = ofKind(await session.read(), "model_call_finished");
    assert.equal(finished.outcome.status, "error", "known not sent: not unknown");
  }
  assert.equal(server.seen.requests, 0);
});
