import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BRAIN_MAX_LATE_RECORDS, BrainError, tool } from "../../mod.ts";
import { extensionEnv } from "../../src/extension/extension_env.ts";
import { toolExtension } from "../../src/extension/extension.ts";
import { serve } from "../_support/serve.ts";

const remote = tool({
  name: "remote",
  description: "Runs in the extension.",
  input: z.object({}),
  run: (_, ctx) => ctx.finish("done"),
});

/** An extension that answers every call with `body` and never ends the response unless `end`. */
function hostile(body: () => ReadableStream<Uint8Array>): (request: Request) => Response {
  return (request) =>
    new URL(request.url).pathname === "/calls/acks" ? new Response(null, { status: 204 }) : new Response(body());
}

/** A response body that sends `lines` and then stays open until the client goes away. */
function openStream(lines: string[]): () => ReadableStream<Uint8Array> {
  return () =>
    new ReadableStream({
      start(controller) {
        for (const line of lines) controller.enqueue(new TextEncoder().encode(line + "\n"));
      },
    });
}

async function callThrough(
  fetch: (request: Request) => Response,
  options: { maxReportBytes?: number } = {},
) {
  await using server = serve(fetch);
  await using brain = new Brain({ allow: { net: [server.host] } });
  const env = extensionEnv({ name: "app", url: server.url, ...options });
  const session = await brain.sessions.create({ tools: [remote({ env })] });
  const end = await session.call("remote", {});
  return { end, records: await session.read() };
}

Deno.test("extension: a finish refused as malformed ends the call error protocol_error, without any deadline", async () => {
  const { end, records } = await callThrough(hostile(openStream([
    JSON.stringify({ type: "finish", id: 1, outcome: { status: "weird" }, cause: "finish" }),
  ])));
  assert.equal(end.cause, "error");
  assert.equal(end.outcome.status === "error" && end.outcome.error.code, "protocol_error");
  assert.equal(records.filter((record) => record.kind === "tool_call_finished").length, 1);
});

Deno.test("extension: a report line over maxReportBytes ends the call payload_too_large without buffering it", async () => {
  let sent = 0;
  const endless = () =>
    new ReadableStream<Uint8Array>({
      pull(controller) {
        // One line that never ends: only the limit stops Brain reading it.
        if (sent > 64 * 1024 * 1024) return controller.close();
        const chunk = new Uint8Array(64 * 1024).fill(120);
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
  const { end } = await callThrough(hostile(endless), { maxReportBytes: 256 * 1024 });
  assert.equal(end.cause, "error");
  assert.equal(end.outcome.status === "error" && end.outcome.error.code, "payload_too_large");
  assert.ok(sent < 8 * 1024 * 1024, `Brain stopped reading early (${sent} bytes sent)`);
  assert.throws(() => extensionEnv({ name: "app", url: "http://127.0.0.1:1", maxReportBytes: 0 }), BrainError);
});

Deno.test("extension: finishes after the finish are recorded late up to the cap, then Brain stops reading", async () => {
  const finishes = Array.from(
    { length: 1_500 },
    (_, index) =>
      JSON.stringify({ type: "finish", id: index + 1, outcome: { status: "ok", value: index }, cause: "finish" }),
  );
  const { end, records } = await callThrough(hostile(openStream(finishes)));
  assert.equal(end.cause, "finish");
  assert.deepEqual(end.outcome, { status: "ok", value: 0 });
  const late = records.filter((record) => record.kind === "tool_call_late").length;
  assert.ok(late <= BRAIN_MAX_LATE_RECORDS, `${late} late records`);
});

Deno.test("extension: the token check refuses prefixes, extensions and case changes of the token", async () => {
  const extension = toolExtension({ tools: [remote()], token: "s3cret" });
  for (const authorization of ["Bearer s3cre", "Bearer s3cret2", "Bearer S3CRET", "bearer s3cret", "", "Bearer "]) {
    const response = await extension.fetch(
      new Request("http://x/calls", { method: "POST", headers: authorization ? { authorization } : {}, body: "{}" }),
    );
    await response.body?.cancel();
    assert.equal(response.status, 401, authorization);
  }
  const accepted = await extension.fetch(
    new Request("http://x/calls", { method: "POST", headers: { authorization: "Bearer s3cret" }, body: "{}" }),
  );
  await accepted.body?.cancel();
  assert.equal(accepted.status, 400, "the right token passes to the body check");
});

Deno.test("extension: a request body over maxRequestBytes is 413 payload_too_large, read no further", async () => {
  const extension = toolExtension({ tools: [remote()], maxRequestBytes: 1024 });
  const response = await extension.fetch(
    new Request("http://x/calls", { method: "POST", body: JSON.stringify({ pad: "x".repeat(4096) }) }),
  );
  assert.equal(response.status, 413);
  assert.equal((await response.json()).error.code, "payload_too_large");
  assert.throws(() => toolExtension({ tools: [], maxRequestBytes: -1 }), BrainError);
});
