import { Hono } from "hono";
import { streamSSE } from "hono/streaming";

/** One request the fake server saw. */
export interface SeenRequest {
  authorization: string | null;
  body: Record<string, unknown>;
}

/**
 * How the fake server answers a request: a chat completion body, a status with
 * a body (and headers), a hang, a dropped connection, or a server-sent event
 * stream: each event is a chunk object (sent as JSON) or raw data such as
 * `[DONE]`; `gate` holds the stream after `gate.after` events until it
 * resolves; `cut` ends the stream without `[DONE]`.
 */
export type Behaviour =
  | { reply: Record<string, unknown> }
  | { status: number; body: string; headers?: Record<string, string> }
  | { hang: true }
  | { drop: true }
  | { events: (Record<string, unknown> | string)[]; gate?: { after: number; open: Promise<void> }; cut?: boolean };

/**
 * A local hono server on 127.0.0.1 that speaks the chat-completions protocol:
 * POST /v1/chat/completions answers with the next behaviour in order; a hanging
 * request waits until the server is disposed.
 */
export function chatServer(behaviours: Behaviour[]): {
  baseUrl: string;
  seen: SeenRequest[];
  /** Resolves once a request is hanging, so the test can interrupt it. */
  hanging: Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
} {
  const seen: SeenRequest[] = [];
  const queue = [...behaviours];
  const hung = new Set<PromiseWithResolvers<void>>();
  const arrived = Promise.withResolvers<void>();
  const app = new Hono();
  app.post("/v1/chat/completions", async (c) => {
    seen.push({ authorization: c.req.header("authorization") ?? null, body: await c.req.json() });
    const behaviour = queue.shift();
    if (!behaviour) return c.json({ error: { message: "no behaviour left" } }, 500);
    if ("reply" in behaviour) return c.json(behaviour.reply);
    if ("status" in behaviour) return c.body(behaviour.body, behaviour.status as 400, behaviour.headers);
    if ("events" in behaviour) {
      const { events, gate, cut } = behaviour;
      return streamSSE(c, async (stream) => {
        for (const [index, event] of events.entries()) {
          if (gate && index === gate.after) await gate.open;
          await stream.writeSSE({ data: typeof event === "string" ? event : JSON.stringify(event) });
        }
        if (!cut) await stream.writeSSE({ data: "[DONE]" });
      });
    }
    if ("hang" in behaviour) {
      const wait = Promise.withResolvers<void>();
      hung.add(wait);
      arrived.resolve();
      await wait.promise;
      hung.delete(wait);
      return c.body(null, 504);
    }
    return new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"choices":[{"message":'));
          queueMicrotask(() => controller.error(new Error("connection dropped by the test server")));
        },
      }),
      { headers: { "content-type": "application/json" } },
    );
  });
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
    onError: () => new Response(null, { status: 500 }),
  }, app.fetch);
  return {
    baseUrl: `http://127.0.0.1:${server.addr.port}/v1`,
    seen,
    hanging: arrived.promise,
    async [Symbol.asyncDispose]() {
      for (const wait of hung) wait.resolve();
      await server.shutdown();
    },
  };
}

/** A chat completion body. */
export function completion(
  message: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id: "chatcmpl-1",
    object: "chat.completion",
    model: "test-model-2026",
    choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: extra.finish_reason ?? "stop" }],
    usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
    ...extra,
  };
}

/** A `chat.completion.chunk` with one choice's `delta` (and a finish reason). */
export function chunk(delta: Record<string, unknown>, finish_reason: string | null = null): Record<string, unknown> {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 0,
    model: "test-model-2026",
    choices: [{ index: 0, delta, finish_reason }],
  };
}

/** The usage chunk a server sends last when asked for `stream_options.include_usage`. */
export function usageChunk(prompt_tokens: number, completion_tokens: number): Record<string, unknown> {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 0,
    model: "test-model-2026",
    choices: [],
    usage: { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens },
  };
}
