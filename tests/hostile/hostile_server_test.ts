import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, type JournalRecord, tool } from "../../mod.ts";
import { withDeadline } from "../_support/deadline.ts";

const echo = tool({ name: "echo", description: "Echoes.", input: z.object({}), run: (_input, ctx) => ctx.finish(1) });
type Frame = { id?: number; op: string; [key: string]: unknown };

/**
 * A Brain server that lies: it upgrades any host, answers `attach` and `create` well, and every other request with
 * the value `answer` gives for it (`undefined` answers nothing); `push` sends frames of its own after each frame.
 */
function lyingServer(
  answer: (frame: Frame) => unknown,
  push: (frame: Frame, send: (frame: unknown) => void) => void = () => {},
): AsyncDisposable & { url: string } {
  const stopped = new AbortController();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {}, signal: stopped.signal }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    const send = (frame: unknown) => socket.send(JSON.stringify(frame));
    socket.onmessage = (event) => {
      const parsed = JSON.parse(event.data);
      for (const frame of (Array.isArray(parsed) ? parsed : [parsed]) as Frame[]) {
        if (frame.op === "ping") send({ t: "pong" });
        if (frame.id === undefined) {
          push(frame, send);
          continue;
        }
        const value = frame.op === "attach"
          ? { failed: [], maxFrameBytes: 1024 * 1024 }
          : frame.op === "create"
          ? { maxEmittedBytes: 1000, maxModelCalls: 5 }
          : answer(frame);
        if (value !== undefined) send({ t: "reply", id: frame.id, value });
        push(frame, send);
      }
    };
    return response;
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: async () => {
      stopped.abort();
      await server.finished;
    },
  };
}

/** The code `attempt` rejects with, within a deadline: a lie is refused, never handed on or waited on forever. */
async function refusal(attempt: Promise<unknown>, what: string): Promise<string> {
  return await withDeadline(
    attempt.then(
      (value) => `accepted ${JSON.stringify(value)}`,
      (error) => error instanceof BrainError ? error.code : `a bare ${error}`,
    ),
    what,
  );
}

Deno.test("hostile Brain servers: replies of the wrong shape are protocol_error to the caller, never handed on or waited on", async () => {
  const lies: Record<string, unknown> = {
    read: null,
    list: [{ id: 5 }],
    start: { call: "x" },
    send: 5,
    model: { content: 1 },
  };
  await using server = lyingServer((frame) => frame.op in lies ? lies[frame.op] : null);
  await using brain = new Brain({ url: server.url, token: "secret", host: "app" });
  const session = await brain.sessions.create({ id: "s", tools: [echo()] });
  const answers = {
    read: await refusal(session.read(), "a read"),
    list: await refusal(brain.sessions.list(), "a list"),
    start: await refusal(session.call("echo", {}), "a call"),
    send: await refusal(session.send("hi"), "a send"),
  };
  assert.deepEqual(answers, {
    read: "protocol_error",
    list: "protocol_error",
    start: "protocol_error",
    send: "protocol_error",
  });
});

Deno.test("hostile Brain servers: a call's end that cannot be read ends the call protocol_error; records that are none are dropped", async () => {
  const started: Frame[] = [];
  await using server = lyingServer(
    (frame) => frame.op === "start" ? { call: 1, run: true } : frame.op === "finish" ? undefined : null,
    (frame, send) => {
      if (frame.op === "start") started.push(frame);
      if (frame.op === "finish") {
        const end = { call: frame.call, sequence: "two", cause: "finish", outcome: { status: "ok", value: 1 } };
        send({ t: "ended", session: "s", call: frame.call, id: frame.id, end });
      }
      if (frame.op === "subscribe") {
        for (const record of [{}, { kind: "user_message" }, { kind: 5, sequence: 1 }, { kind: "x", sequence: -1 }]) {
          send({ t: "record", stream: frame.id, record });
        }
        send({ t: "record", stream: frame.id, record: { kind: "user_message", content: "kept", sequence: 1 } });
      }
    },
  );
  await using brain = new Brain({ url: server.url, token: "secret", host: "app" });
  const session = await brain.sessions.create({ id: "s", tools: [echo()] });
  assert.equal(await refusal(session.call("echo", {}), "the call's end"), "protocol_error");
  assert.equal(started.length, 1);
  const seen: JournalRecord[] = [];
  for await (const record of session.records({ signal: AbortSignal.timeout(5_000) })) {
    seen.push(record);
    break;
  }
  assert.deepEqual(seen.map((record) => record.sequence), [1], "only the record that is one came through");
});

Deno.test("hostile Brain servers: a call invoked again is never run twice, and one naming another session's handle never runs", async () => {
  let runs = 0;
  const counted = tool({
    name: "counted",
    description: "Counts its runs.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish(++runs),
  });
  const finished = new Map<string, PromiseWithResolvers<Frame>>();
  const finish = (session: string, call: number) => {
    const key = `${session}#${call}`;
    if (!finished.has(key)) finished.set(key, Promise.withResolvers());
    return finished.get(key)!;
  };
  await using server = lyingServer(
    (frame) => frame.op === "finish" ? { sequence: 100 + (frame.call as number), late: false } : null,
    (frame, send) => {
      if (frame.op === "finish") finish(frame.session as string, frame.call as number).resolve(frame);
      if (frame.op !== "create") return;
      const invoke = { t: "invoke", handle: frame.handle, session: "s", tool: "counted", input: {} };
      send({ ...invoke, call: 7 });
      send({ ...invoke, call: 7 });
      send({ ...invoke, session: "other", call: 9 });
      // Frames are handled in order: once call 8 finished, a second run of call 7 would have begun.
      send({ ...invoke, call: 8 });
    },
  );
  await using brain = new Brain({ url: server.url, token: "secret", host: "app" });
  await brain.sessions.create({ id: "s", tools: [counted()] });
  const other = await withDeadline(finish("other", 9).promise, "the refusal of another session's call");
  assert.equal((other.outcome as { error: { code: string } }).error.code, "unknown_tool");
  await withDeadline(finish("s", 8).promise, "the end of call 8");
  assert.equal(runs, 2, "calls 7 and 8 ran once each");
  assert.deepEqual((await finish("s", 7).promise).outcome, { status: "ok", value: 1 });
});

Deno.test("hostile Brain servers: a parse whose schema throws null is answered with an error; the host lives on", async () => {
  const picky = tool({
    name: "picky",
    description: "Refuses 13 by throwing null.",
    input: z.object({ a: z.number() }).refine(({ a }) => {
      if (a === 13) throw null;
      return true;
    }),
    run: (_input, ctx) => ctx.finish(1),
  });
  const parsed = Promise.withResolvers<Frame>();
  await using server = lyingServer(() => null, (frame, send) => {
    if (frame.op === "create") {
      send({ t: "parse", ask: 1, handle: frame.handle, tool: "picky", io: "input", value: { a: 13 } });
    }
    if (frame.op === "parsed") parsed.resolve(frame);
  });
  await using brain = new Brain({ url: server.url, token: "secret", host: "app" });
  await brain.sessions.create({ id: "s", tools: [picky()] });
  const answer = await withDeadline(parsed.promise, "the parse's answer");
  assert.deepEqual(answer.error, [{ path: [], message: "input validation threw: null" }]);
});
