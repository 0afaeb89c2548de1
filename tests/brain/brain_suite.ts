import assert from "node:assert/strict";
import { z } from "zod";
import { type Brain, BrainError, fail, type JsonValue, tool } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { hasCode } from "../_support/has_code.ts";

/** A Brain to test and how to dispose of what it needs. */
export interface OpenedBrain {
  brain: Brain;
  dispose(): Promise<void>;
}

const echo = tool({
  name: "echo",
  description: "Echo the text after an event.",
  input: z.object({ text: z.string() }),
  output: z.object({ text: z.string(), eventSequence: z.number() }),
  run: async ({ text }, ctx) => {
    const eventSequence = await ctx.emit("echo_started", { text });
    return ctx.finish({ text, eventSequence });
  },
});

const failing = tool({
  name: "failing",
  description: "Fails in the way its input asks.",
  input: z.object({ how: z.enum(["outcome", "throw", "output"]) }),
  output: z.object({ n: z.number() }),
  run: ({ how }, ctx) => {
    if (how === "throw") throw new TypeError("boom");
    if (how === "output") return ctx.finish({ n: "not a number" } as never);
    return ctx.finish(fail("not_found", "no such record", { retryable: false, details: { id: "7" } }));
  },
});

/** Says it started, waits for its signal, reports what it saw, then finishes late. */
function waiter(seen: PromiseWithResolvers<unknown>, started = Promise.withResolvers<void>()) {
  return tool({
    name: "waiter",
    description: "Waits until the call is stopped.",
    input: z.object({}),
    run: async (_input, ctx) => {
      started.resolve();
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      seen.resolve(ctx.signal.reason);
      await ctx.finish().catch(() => {});
    },
  });
}

/** Registers the behaviour every Brain has, embedded or remote; `open` gives a fresh one. */
export function brainSuite(name: string, open: () => Promise<OpenedBrain>): void {
  const test = (title: string, fn: (brain: Brain) => Promise<void>) =>
    Deno.test(`${name}: ${title}`, async () => {
      const { brain, dispose } = await open();
      try {
        await fn(brain);
      } finally {
        await brain.close();
        await dispose();
      }
    });

  test("a call commits its intent, event, result and finish in order", async (brain) => {
    const session = await brain.sessions.create({ tools: [echo()] });
    const end = await session.call("echo", { text: "hi" });
    const records = await session.read();
    assert.deepEqual(records.map((record) => record.kind), [
      "tool_call_started",
      "tool_event",
      "tool_result",
      "tool_call_finished",
    ]);
    assert.deepEqual(end, {
      call: 1,
      sequence: 4,
      cause: "finish",
      outcome: { status: "ok", value: { text: "hi", eventSequence: 2 } },
    });
    assert.deepEqual(records[0], { ...records[0], kind: "tool_call_started", tool: "echo", input: { text: "hi" } });
  });

  test("error outcomes keep code, message, retryable and details; throws and bad output are errors", async (brain) => {
    const session = await brain.sessions.create({ tools: [failing()] });
    assert.deepEqual((await session.call("failing", { how: "outcome" })).outcome, {
      status: "error",
      error: { code: "not_found", message: "no such record", retryable: false, details: { id: "7" } },
    });
    const thrown = await session.call("failing", { how: "throw" });
    assert.equal(thrown.cause, "error");
    assert.deepEqual(thrown.outcome, {
      status: "error",
      error: { code: "tool_error", message: "boom", details: { name: "TypeError" } },
    });
    const invalid = await session.call("failing", { how: "output" });
    assert.equal(invalid.outcome.status === "error" && invalid.outcome.error.code, "invalid_output");
    const badInput = await session.call("failing", { how: "sideways" });
    assert.equal(badInput.outcome.status === "error" && badInput.outcome.error.code, "invalid_input");
  });

  test("cancelling ends the call cancelled, aborts ctx.signal and records the later finish as late", async (brain) => {
    const seen = Promise.withResolvers<unknown>();
    const started = Promise.withResolvers<void>();
    const session = await brain.sessions.create({ tools: [waiter(seen, started)()] });
    const controller = new AbortController();
    const call = await session.start("waiter", {}, { signal: controller.signal });
    await started.promise;
    controller.abort();
    const end = await call.ended;
    assert.equal(end.cause, "cancelled");
    assert.equal(end.outcome.status, "cancelled");
    assert.ok(await seen.promise instanceof BrainError);
    for await (const record of session.records({ from: end.sequence + 1 })) {
      assert.deepEqual([record.kind, "call" in record && record.call], ["tool_call_late", call.sequence]);
      break;
    }
  });

  test("a passed deadline ends the call with timeout", async (brain) => {
    const seen = Promise.withResolvers<unknown>();
    const session = await brain.sessions.create({ tools: [waiter(seen)()] });
    const end = await session.call("waiter", {}, { deadline: Date.now() + 20 });
    assert.deepEqual([end.cause, end.outcome.status], ["timeout", "timeout"]);
    await seen.promise;
  });

  test("ctx.signal.reason carries the first terminal cause: deadline, cancellation or the Tool's own finish", async (brain) => {
    const reasonOf = (reason: unknown) => {
      assert.ok(reason instanceof BrainError);
      return { code: reason.code, details: reason.details };
    };
    const timedOut = Promise.withResolvers<unknown>();
    const cancelled = Promise.withResolvers<unknown>();
    const started = Promise.withResolvers<void>();
    const finished = Promise.withResolvers<unknown>();
    const finisher = tool({
      name: "finisher",
      description: "Finishes, then reports its signal.",
      input: z.object({}),
      run: async (_input, ctx) => {
        const done = await ctx.finish("done");
        finished.resolve({ aborted: ctx.signal.aborted, reason: ctx.signal.reason, late: done.late });
        return done;
      },
    });
    const session = await brain.sessions.create({
      tools: [waiter(timedOut)(), finisher()],
    });
    const cancelling = await brain.sessions.create({ tools: [waiter(cancelled, started)()] });
    assert.equal((await session.call("waiter", {}, { deadline: Date.now() + 20 })).cause, "timeout");
    assert.deepEqual(reasonOf(await timedOut.promise), { code: "timeout", details: { cause: "timeout" } });

    const call = await cancelling.start("waiter", {});
    await started.promise;
    await call.cancel();
    assert.deepEqual(reasonOf(await cancelled.promise), { code: "cancelled", details: { cause: "cancelled" } });

    assert.equal((await session.call("finisher", {})).cause, "finish");
    const seen = await finished.promise as { aborted: boolean; reason: unknown; late: boolean };
    assert.deepEqual([seen.aborted, seen.late], [true, false]);
    assert.deepEqual(reasonOf(seen.reason), { code: "call_finished", details: { cause: "finish" } });
  });

  test("records() follows commits as they happen", async (brain) => {
    const session = await brain.sessions.create({ tools: [echo()] });
    const controller = new AbortController();
    const followed: JournalRecord[] = [];
    const following = (async () => {
      for await (const record of session.records({ signal: controller.signal })) {
        followed.push(record);
        if (record.kind === "tool_call_finished") controller.abort();
      }
    })();
    await session.call("echo", { text: "a" });
    await following;
    assert.deepEqual(followed, await session.read());
  });

  test("get(id) opens a handle without handlers; get with the original Tools restores them", async (brain) => {
    const created = await brain.sessions.create({ tools: [echo()] });
    await created.call("echo", { text: "one" });
    await created.end();
    const reader = await brain.sessions.get(created.id);
    assert.equal((await reader.read()).length, 4);
    await assert.rejects(reader.start("echo", { text: "x" }), hasCode("unknown_tool"));
    const restored = await brain.sessions.get(created.id, { tools: [echo()] });
    const end = await restored.call("echo", { text: "two" });
    assert.deepEqual(end.outcome, { status: "ok", value: { text: "two", eventSequence: 6 } });
  });

  test("reattaching with a different contract is refused", async (brain) => {
    const created = await brain.sessions.create({ tools: [echo()] });
    const changed = tool({
      name: "echo",
      description: "Echo the text after an event.",
      input: z.object({ text: z.string(), loud: z.boolean() }),
      run: (_input, ctx) => ctx.finish(null),
    });
    await assert.rejects(
      brain.sessions.get(created.id, { tools: [changed()] }),
      hasCode("reattach_mismatch"),
    );
  });

  test("ending a session cancels its open calls and releases its handlers", async (brain) => {
    const seen = Promise.withResolvers<unknown>();
    const session = await brain.sessions.create({ tools: [waiter(seen)()] });
    const call = await session.start("waiter", {});
    await session.end();
    assert.equal((await call.ended).cause, "cancelled");
    assert.deepEqual(session.tools, []);
    await assert.rejects(session.start("waiter", {}), hasCode("session_closed"));
  });

  test("ctx carries frozen options, sessionId, the started sequence and the original deadline", async (brain) => {
    const seen = Promise.withResolvers<JsonValue>();
    const probe = tool({
      name: "probe",
      description: "Reports its ctx.",
      input: z.object({}),
      options: z.object({ label: z.string() }),
      run: (_input, ctx) => {
        seen.resolve({
          options: ctx.options,
          frozen: Object.isFrozen(ctx.options),
          sessionId: ctx.sessionId,
          sequence: ctx.sequence,
          deadline: ctx.deadline ?? null,
        });
        return ctx.finish();
      },
    });
    const session = await brain.sessions.create({ tools: [probe({ label: "placed" })] });
    const deadline = Date.now() + 60_000;
    const end = await session.call("probe", {}, { deadline });
    const [started] = await session.read();
    assert.deepEqual([started.kind, started.kind === "tool_call_started" && started.deadline], [
      "tool_call_started",
      deadline,
    ]);
    assert.deepEqual(await seen.promise, {
      options: { label: "placed" },
      frozen: true,
      sessionId: session.id,
      sequence: end.call,
      deadline,
    });
  });

  test("deleting a session cancels its open calls and releases its handlers", async (brain) => {
    const seen = Promise.withResolvers<unknown>();
    const started = Promise.withResolvers<void>();
    const session = await brain.sessions.create({ tools: [waiter(seen, started)()] });
    const call = await session.start("waiter", {}, { deadline: Date.now() + 10_000 });
    await started.promise;
    await brain.sessions.delete(session.id);
    assert.equal((await call.ended).cause, "cancelled");
    assert.ok(await seen.promise instanceof BrainError, "the running function saw its signal abort");
    assert.deepEqual(session.tools, []);
    await assert.rejects(session.start("waiter", {}), hasCode("session_closed"));
  });

  test("a failed creation disturbs nothing: existing sessions keep working and the client still closes", async (brain) => {
    const kept = await brain.sessions.create({ id: "kept", tools: [echo()] });
    await assert.rejects(
      brain.sessions.create({ id: "kept", tools: [failing()] }),
      hasCode("session_exists"),
    );
    assert.deepEqual((await brain.sessions.list()).map((meta) => [meta.id, meta.tools.map((tool) => tool.name)]), [
      ["kept", ["echo"]],
    ]);
    assert.equal((await kept.call("echo", { text: "still here" })).cause, "finish");
    await brain.close();
    await assert.rejects(brain.sessions.create(), hasCode("brain_closed"));
  });

  test("list shows sessions; delete removes one with its records", async (brain) => {
    const kept = await brain.sessions.create({ tools: [echo()] });
    const gone = await brain.sessions.create({ id: "gone" });
    assert.deepEqual((await brain.sessions.list()).map((meta) => meta.id).sort(), [kept.id, "gone"].sort());
    assert.deepEqual((await brain.sessions.list()).find((meta) => meta.id === kept.id)?.tools, [echo().advertised]);
    await brain.sessions.delete(gone.id);
    assert.deepEqual((await brain.sessions.list()).map((meta) => meta.id), [kept.id]);
    await assert.rejects(brain.sessions.get("gone"), hasCode("session_not_found"));
  });

  test("bad arguments throw typed errors before anything is committed", async (brain) => {
    await assert.rejects(
      brain.sessions.create({ tools: [echo(), echo()] }),
      hasCode("duplicate_tool"),
    );
    const session = await brain.sessions.create({ tools: [echo()] });
    await assert.rejects(
      session.start("echo", { text: undefined } as never),
      hasCode("invalid_input"),
    );
    await assert.rejects(
      session.start("echo", { text: "x" }, { deadline: Infinity }),
      hasCode("invalid_argument"),
    );
    await assert.rejects(session.start("nope", {}), hasCode("unknown_tool"));
    assert.deepEqual(await session.read(), []);
  });

  test("a factory given where a placement belongs is invalid_tool, naming the call to make", async (brain) => {
    const mistake = { tools: [echo] } as unknown as { tools: [] };
    await assert.rejects(brain.sessions.create(mistake), (error: BrainError) => {
      assert.equal(error.code, "invalid_tool");
      assert.match(
        error.message,
        /^tools\[0\] is the factory of tool echo, not a placement: call it, as in tools: \[echo\(\)\]/,
      );
      return true;
    });
    await assert.rejects(
      brain.sessions.create({ tools: [{ name: "echo" }] as never }),
      (error: BrainError) => error.code === "invalid_tool" && /tools\[0\] is not a placed Tool/.test(error.message),
    );
    const session = await brain.sessions.create({ tools: [echo()] });
    await assert.rejects(brain.sessions.get(session.id, mistake), hasCode("invalid_tool"));
    await assert.rejects(session.start(echo as never, { text: "x" }), (error: BrainError) => {
      assert.equal(error.code, "unknown_tool");
      assert.match(error.message, /not its factory: session\.call\("echo", input\)/);
      return true;
    });
    assert.deepEqual(await session.read(), []);
  });

  test("a duration given as deadline, an unknown call option, or both deadline and timeoutMs are refused", async (brain) => {
    const session = await brain.sessions.create({ tools: [echo()] });
    await assert.rejects(session.start("echo", { text: "x" }, { deadline: 5000 }), (error: BrainError) => {
      assert.equal(error.code, "invalid_argument");
      assert.match(error.message, /deadline 5000 is a duration, not an absolute time: give \{ timeoutMs: 5000 \}/);
      return true;
    });
    await assert.rejects(session.start("echo", { text: "x" }, { timeout: 5000 } as never), (error: BrainError) => {
      assert.equal(error.code, "invalid_argument");
      assert.match(error.message, /^unknown call options "timeout": the known ones are deadline, timeoutMs,/);
      return true;
    });
    await assert.rejects(
      session.start("echo", { text: "x" }, { deadline: Date.now() + 1000, timeoutMs: 1000 }),
      (error: BrainError) => error.code === "invalid_argument" && /not both/.test(error.message),
    );
    await assert.rejects(
      session.start("echo", { text: "x" }, { timeoutMs: -1 }),
      (error: BrainError) => error.code === "invalid_argument" && /timeoutMs must be/.test(error.message),
    );
    assert.deepEqual(await session.read(), []);
  });

  test("a misspelt session option is refused, listing the known ones", async (brain) => {
    await assert.rejects(brain.sessions.create({ tool: [echo()] } as never), (error: BrainError) => {
      assert.equal(error.code, "invalid_argument");
      assert.match(error.message, /^unknown session options "tool": the known ones are tools, environments, id,/);
      return true;
    });
    const session = await brain.sessions.create({ tools: [echo()] });
    await assert.rejects(
      brain.sessions.get(session.id, { tool: [echo()] } as never),
      (error: BrainError) => error.code === "invalid_argument" && /unknown session options "tool"/.test(error.message),
    );
  });

  test("timeoutMs becomes the absolute deadline the call records and ctx sees", async (brain) => {
    const before = Date.now();
    const session = await brain.sessions.create({ tools: [echo()] });
    const end = await session.call("echo", { text: "x" }, { timeoutMs: 60_000 });
    const after = Date.now();
    assert.equal(end.cause, "finish");
    const [started] = await session.read({ from: end.call, limit: 1 });
    const deadline = started.kind === "tool_call_started" ? started.deadline ?? 0 : 0;
    assert.ok(deadline >= before + 60_000 && deadline <= after + 60_000, `deadline ${deadline}`);
  });

  test("a late ctx.emit rejects call_finished when awaited and is no unhandled rejection when not", async (brain) => {
    const unhandled: unknown[] = [];
    const onUnhandled = (event: PromiseRejectionEvent) => {
      unhandled.push(event.reason);
      event.preventDefault();
    };
    globalThis.addEventListener("unhandledrejection", onUnhandled);
    const late = Promise.withResolvers<unknown>();
    const sloppy = tool({
      name: "sloppy",
      description: "Finishes, then emits without awaiting and once more awaiting.",
      input: z.object({}),
      run: async (_input, ctx) => {
        await ctx.finish("done");
        void ctx.emit("forgotten", null);
        void ctx.emitResult("forgotten");
        late.resolve(await ctx.emit("late", null).then(() => undefined, (error) => error));
      },
    });
    try {
      const session = await brain.sessions.create({ tools: [sloppy()] });
      const end = await session.call("sloppy", {});
      const error = await late.promise as BrainError;
      assert.equal(error.code, "call_finished");
      assert.match(error.message, /^ctx\.emit after ctx\.finish: the Tool already finished/);
      // A sentinel call commits after the sloppy Tool's last emission was refused.
      await session.call("sloppy", {});
      assert.deepEqual(unhandled, []);
      assert.deepEqual((await session.read()).filter((r) => r.kind === "tool_event"), []);
      assert.equal(end.cause, "finish");
    } finally {
      globalThis.removeEventListener("unhandledrejection", onUnhandled);
    }
  });

  test("a ctx.finish after brain.close() rejects brain_closed: the call ended at the close, and nothing more is recorded", async (brain) => {
    const started = Promise.withResolvers<void>();
    const closed = Promise.withResolvers<void>();
    const finished = Promise.withResolvers<unknown>();
    const lingering = tool({
      name: "lingering",
      description: "Finishes once its Brain has closed.",
      input: z.object({}),
      run: async (_input, ctx) => {
        started.resolve();
        await closed.promise;
        finished.resolve(await ctx.finish("late").then((done) => ({ ...done }), (error) => error));
      },
    });
    const session = await brain.sessions.create({ tools: [lingering()] });
    const call = await session.start("lingering", {});
    await started.promise;
    await brain.close();
    closed.resolve();
    const answer = await finished.promise;
    assert.ok(hasCode("brain_closed")(answer), `the late finish answered ${JSON.stringify(answer)}`);
    assert.equal((await call.ended).cause, "cancelled");
  });

  test("await using closes the Brain when the block ends", async (brain) => {
    {
      await using disposable = brain;
      await disposable.sessions.create();
    }
    await assert.rejects(brain.sessions.create(), hasCode("brain_closed"));
  });

  test("close() called again while the Brain closes settles once it has closed, as every call of it does", async (brain) => {
    const seen = Promise.withResolvers<unknown>();
    const started = Promise.withResolvers<void>();
    const session = await brain.sessions.create({ tools: [waiter(seen, started)()] });
    const call = await session.start("waiter", {});
    await started.promise;
    const closes = [brain.close(), brain.close()];
    const settled: number[] = [];
    closes.forEach((closing, index) => closing.then(() => settled.push(index)));
    await closes[1];
    await brain.close();
    assert.deepEqual(settled, [0, 1], "the first close() had settled when the later ones did");
    assert.equal((await call.ended).cause, "cancelled");
  });

  test("a closed Brain refuses new sessions", async (brain) => {
    await brain.close();
    await assert.rejects(brain.sessions.create(), hasCode("brain_closed"));
  });
}
