import assert from "node:assert/strict";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { lookup } from "../../examples/lookup.ts";
import { brainTracer } from "../../src/telemetry/tracer.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";

/** An in-memory exporter behind a registered tracer provider and an async context manager, unregistered on dispose. */
function collectSpans(): InMemorySpanExporter & Disposable {
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  return Object.assign(exporter, {
    [Symbol.dispose]() {
      trace.disable();
      context.disable();
    },
  });
}

function named(spans: ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((span) => span.name === name);
}

function one(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = named(spans, name);
  assert.equal(found.length, 1, `one span ${name} among ${spans.map((span) => span.name).join(", ")}`);
  return found[0];
}

function isChild(child: ReadableSpan, parent: ReadableSpan): boolean {
  return child.spanContext().traceId === parent.spanContext().traceId &&
    child.parentSpanContext?.spanId === parent.spanContext().spanId;
}

const failing = tool({
  name: "failing",
  description: "Fails.",
  input: z.object({}),
  run: (_input, ctx) => ctx.finish({ status: "error", error: { code: "not_found", message: "nothing" } }),
});

Deno.test("without a registered tracer provider Brain makes no spans", async () => {
  assert.equal(brainTracer(), undefined);
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const brain = new Brain();
  try {
    const session = await brain.sessions.create({ tools: [lookup({ prefix: "customer:" })] });
    await session.call("lookup", { id: "7" });
    assert.deepEqual(exporter.getFinishedSpans(), [], "an unregistered provider sees nothing");
  } finally {
    await brain.close();
    await provider.shutdown();
  }
});

Deno.test("a turn's span holds its model calls and Tool calls; each call span holds its emits", async () => {
  using exporter = collectSpans();
  await using brain = new Brain();
  const provider = new ScriptedProvider([
    { toolCalls: [{ id: "c1", name: "lookup", input: { id: "7" } }] },
    "Customer 7 is Ada Lovelace.",
  ]);
  const session = await brain.sessions.create({
    tools: [lookup({ prefix: "customer:" })],
    model: { provider, model: "demo" },
  });
  await session.send("Who is customer 7?");
  const records = await session.read();
  const started = records.find((record) => record.kind === "tool_call_started")!;
  const finished = records.find((record) => record.kind === "tool_call_finished")!;
  const spans = exporter.getFinishedSpans();

  const turn = one(spans, "invoke_agent");
  assert.equal(turn.parentSpanContext, undefined, "the turn is a root span");
  assert.equal(turn.attributes["brain.session.id"], session.id);
  const chats = named(spans, "chat demo");
  assert.equal(chats.length, 2);
  assert.ok(chats.every((chat) => isChild(chat, turn)), "model calls are children of the turn");
  assert.ok(chats.every((chat) => (chat.attributes["gen_ai.usage.input_tokens"] as number) > 0));
  assert.ok(chats.every((chat) => (chat.attributes["gen_ai.usage.output_tokens"] as number) > 0));
  assert.deepEqual(chats.map((chat) => chat.attributes["gen_ai.system"]), ["scripted", "scripted"]);

  const call = one(spans, "execute_tool lookup");
  assert.ok(isChild(call, turn), "the Tool call is a child of the turn");
  assert.deepEqual(
    {
      session: call.attributes["brain.session.id"],
      sequence: call.attributes["brain.call.sequence"],
      tool: call.attributes["gen_ai.tool.name"],
      environment: call.attributes["brain.environment.kind"],
      outcome: call.attributes["brain.call.outcome"],
      cause: call.attributes["brain.call.cause"],
      terminal: call.attributes["brain.call.terminal_sequence"],
    },
    {
      session: session.id,
      sequence: started.sequence,
      tool: "lookup",
      environment: "host",
      outcome: "ok",
      cause: "finish",
      terminal: finished.sequence,
    },
  );
  assert.equal(call.startTime[0] * 1000 + Math.round(call.startTime[1] / 1e6), started.at, "it starts at the intent");
  const emit = one(spans, "emit lookup_started");
  assert.ok(isChild(emit, call), "the emit is a child of its call");
  assert.equal(
    emit.attributes["brain.record.sequence"],
    records.find((record) => record.kind === "tool_event")!.sequence,
  );
});

Deno.test("a direct call's span is a child of the caller's active span and carries an error outcome", async () => {
  using exporter = collectSpans();
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [failing()] });
  await trace.getTracer("app").startActiveSpan("app work", async (span) => {
    await session.call("failing", {});
    span.end();
  });
  const spans = exporter.getFinishedSpans();
  const call = one(spans, "execute_tool failing");
  assert.ok(isChild(call, one(spans, "app work")));
  assert.equal(call.attributes["brain.call.outcome"], "error");
  assert.equal(call.attributes["error.type"], "not_found");
  assert.equal(call.status.code, 2, "the span's status is ERROR");
});

Deno.test("trace context travels over the host connection: a remote Tool's spans join the caller's trace", async () => {
  using exporter = collectSpans();
  await using server = await servedBrain({ port: 0, serverToken: "operator" });
  const ran = tool({
    name: "ran",
    description: "Makes its own span.",
    input: z.object({}),
    run: async (_input, ctx) => {
      await trace.getTracer("tool").startActiveSpan("inside the tool", async (span) => {
        await ctx.emit("working", null);
        span.end();
      });
      return ctx.finish("done");
    },
  });
  await using brain = new Brain({ url: server.url, token: "host-token", host: "app", serverToken: "operator" });
  const session = await brain.sessions.create({ tools: [ran()] });
  await trace.getTracer("app").startActiveSpan("caller", async (span) => {
    await session.call("ran", {});
    span.end();
  });
  const spans = exporter.getFinishedSpans();
  const caller = one(spans, "caller");
  const [onServer, onHost] = named(spans, "execute_tool ran").toSorted((a, b) => a.kind - b.kind);
  assert.equal(onHost.kind, 1, "the host's run is a SERVER span");
  assert.ok(isChild(onServer, caller), "the server's call span is a child of the caller's span");
  assert.ok(isChild(onHost, onServer), "the host's run is a child of the server's call span");
  assert.ok(isChild(one(spans, "inside the tool"), onHost), "the Tool's own span joins the trace");
  assert.ok(isChild(one(spans, "emit working"), onServer), "its emit is a child of the call span");
  assert.equal(onServer.attributes["brain.call.outcome"], "ok");
});

Deno.test("a call's traceparent option names its parent; a malformed one is ignored and a non-string refused", async () => {
  using exporter = collectSpans();
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [failing()] });
  const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  await session.call("failing", {}, { traceparent: parent });
  await session.call("failing", {}, { traceparent: "not a traceparent" });
  await assert.rejects(
    session.call("failing", {}, { traceparent: 7 as unknown as string }),
    hasCode("invalid_argument"),
  );
  const [named, root] = exporter.getFinishedSpans();
  assert.equal(named.spanContext().traceId, "0af7651916cd43dd8448eb211c80319c");
  assert.equal(named.parentSpanContext?.spanId, "b7ad6b7169203331");
  assert.equal(root.parentSpanContext, undefined);
  assert.equal(exporter.getFinishedSpans().length, 2, "the refused call made no span");
});
