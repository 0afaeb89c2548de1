import assert from "node:assert/strict";
import { z } from "zod";
import { BrainError, tool } from "../../mod.ts";
import { toolExtension } from "../../src/extension/mod.ts";
import { withDeadline } from "../_support/deadline.ts";

const probe = tool({
  name: "probe",
  description: "Emits a result and finishes with the code its emit was refused with.",
  input: z.object({}),
  run: async (_input, ctx) => {
    const seen = await ctx.emitResult("x").then(
      () => "committed",
      (error) => error instanceof BrainError ? error.code : `bare ${error}`,
    );
    return ctx.finish(seen);
  },
});

Deno.test("hostile extension acks: malformed acks are 400, an unknown error code arrives as protocol_error, a replayed call is refused", async () => {
  const app = toolExtension({ tools: [probe()], lifetimeMs: 10_000 });
  const post = (path: string, body: unknown) =>
    app.fetch(new Request(`http://x${path}`, { method: "POST", body: JSON.stringify(body) }));
  const ack = async (body: Record<string, unknown>) => {
    const response = await post("/calls/acks", { sessionId: "s", call: 1, ...body });
    return { status: response.status, code: response.status === 204 ? undefined : (await response.json()).error.code };
  };
  const invocation = { sessionId: "s", sequence: 1, tool: "probe", input: {}, options: {} };
  const response = await post("/calls", invocation);
  const lines = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const next = async () => JSON.parse((await withDeadline(lines.read(), "a report line")).value!.trim());
  const result = await next();
  assert.equal(result.type, "result");
  for (
    const malformed of [
      { report: result.id, sequence: "2" },
      { report: result.id, sequence: -1 },
      { report: result.id, late: "yes", sequence: 2 },
      { report: result.id, error: "refused" },
      { report: result.id, error: { code: 5, message: "m" } },
      { report: result.id, error: { code: "x", message: "m", details: JSON.parse("[".repeat(300) + "]".repeat(300)) } },
    ]
  ) assert.deepEqual(await ack(malformed), { status: 400, code: "protocol_error" }, JSON.stringify(malformed));
  assert.deepEqual(await ack({ report: result.id, error: { code: "no_such_code", message: "m" } }), {
    status: 204,
    code: undefined,
  });
  const finish = await next();
  assert.equal(finish.type, "finish");
  assert.deepEqual(finish.outcome, { status: "ok", value: "protocol_error" }, "the Tool saw a code of the closed list");
  assert.deepEqual(await ack({ report: finish.id, sequence: 3 }), { status: 204, code: undefined });
  assert.equal((await lines.read()).done, true);
  const replay = await post("/calls", invocation);
  assert.equal(replay.status, 409);
  assert.equal((await replay.json()).error.code, "call_finished", "a call is run once, never replayed");
});

Deno.test("hostile extension requests: a body that never ends is refused 408 timeout at the lifetime, never held open", async () => {
  const app = toolExtension({ tools: [probe()], lifetimeMs: 50 });
  for (const path of ["/calls", "/calls/acks"]) {
    let cancelled = false;
    const endless = new ReadableStream<Uint8Array>({
      start: (controller) => controller.enqueue(new TextEncoder().encode('{"sessionId":')),
      cancel: () => void (cancelled = true),
    });
    const response = await withDeadline(
      Promise.resolve(app.fetch(new Request(`http://x${path}`, { method: "POST", body: endless }))),
      `the answer to an endless ${path} body`,
    );
    assert.equal(response.status, 408, path);
    assert.equal((await response.json()).error.code, "timeout", path);
    assert.ok(cancelled, `${path}: the body was cancelled, not left to the client`);
  }
});

Deno.test("hostile extension calls: a deadline already passed ends the call expired at once and leaves no call running", async () => {
  const app = toolExtension({ tools: [probe()], lifetimeMs: 10_000 });
  const invocation = {
    sessionId: "s",
    sequence: 1,
    tool: "probe",
    input: {},
    options: {},
    deadline: Date.now() - 1_000,
  };
  const post = () => app.fetch(new Request("http://x/calls", { method: "POST", body: JSON.stringify(invocation) }));
  const response = await post();
  assert.equal(response.status, 200);
  const lines = (await withDeadline(response.text(), "the expired call's body")).trim().split("\n").map((line) =>
    JSON.parse(line)
  );
  assert.deepEqual(lines.map((line) => [line.type, line.cause]), [["expired", "timeout"]]);
  const again = await post();
  assert.equal(again.status, 409);
  assert.equal((await again.json()).error.code, "call_finished", "the call ran once and is no longer running");
});

Deno.test("hostile extension calls: invocations naming no session call and acks naming none by strings are refused, never a 500", async () => {
  const app = toolExtension({ tools: [probe()], lifetimeMs: 10_000 });
  const post = async (path: string, body: string) => {
    const response = await app.fetch(new Request(`http://x${path}`, { method: "POST", body }));
    return `${response.status} ${(await response.json()).error.code}`;
  };
  const invocations = [
    { sessionId: "s", sequence: -1 },
    { sessionId: "s", sequence: 0 },
    { sessionId: "../x", sequence: 1 },
    { sessionId: "s\u0000", sequence: 1 },
    { sessionId: "x".repeat(100_000), sequence: 1 },
  ];
  for (const invocation of invocations) {
    const body = JSON.stringify({ ...invocation, tool: "probe", input: {} });
    assert.equal(await post("/calls", body), "400 invalid_argument", body.slice(0, 64));
  }
  for (const body of ['{"sessionId":{"toString":1},"call":1,"report":1}', '{"sessionId":"s","call":{"valueOf":1}}']) {
    assert.equal(await post("/calls/acks", body), "404 call_finished", body);
  }
});

Deno.test("hostile extension routes: an unknown path or method is 404 JSON with a code, not hono's text", async () => {
  const app = toolExtension({ tools: [probe()], lifetimeMs: 10_000 });
  for (const [method, path] of [["GET", "/calls"], ["GET", "/"], ["POST", "/nope"], ["PUT", "/calls/acks"]]) {
    const response = await app.fetch(new Request(`http://x${path}`, { method }));
    assert.equal(response.status, 404, `${method} ${path}`);
    assert.equal((await response.json()).error.code, "invalid_argument", `${method} ${path}`);
  }
});
