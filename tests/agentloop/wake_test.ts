import assert from "node:assert/strict";
import { Brain, MemoryJournal, ScriptedProvider, WAKE_BATCH_MS, WakeBatcher, type WakeTimers } from "../../mod.ts";

/** Timers the test fires by hand, recording each requested delay. */
function manualTimers() {
  const scheduled: { fire: () => void; delay: number; cancelled: boolean }[] = [];
  const timers: WakeTimers = {
    schedule: (fire, delay) => {
      const entry = { fire, delay, cancelled: false };
      scheduled.push(entry);
      return entry;
    },
    cancel: (handle) => {
      (handle as { cancelled: boolean }).cancelled = true;
    },
  };
  return { scheduled, timers };
}

Deno.test("wake notifications are batched for 5 ms from the first pending commit", () => {
  const { scheduled, timers } = manualTimers();
  let wakes = 0;
  const batcher = new WakeBatcher(() => wakes++, { timers });
  batcher.notify();
  batcher.notify();
  batcher.notify();
  assert.equal(scheduled.length, 1, "later notifications join the open window");
  assert.equal(scheduled[0].delay, WAKE_BATCH_MS);
  assert.equal(WAKE_BATCH_MS, 5);
  assert.equal(wakes, 0);
  scheduled[0].fire();
  assert.equal(wakes, 1);
  batcher.notify();
  assert.equal(scheduled.length, 2, "a commit after the window opens a new one");
});

Deno.test("further events do not extend the wake window", () => {
  const { scheduled, timers } = manualTimers();
  const batcher = new WakeBatcher(() => {}, { timers });
  batcher.notify();
  for (let index = 0; index < 10; index++) batcher.notify();
  assert.deepEqual(scheduled.map((entry) => entry.delay), [WAKE_BATCH_MS]);
  assert.equal(scheduled[0].cancelled, false, "the first window is never re-armed");
});

Deno.test("a closed batcher cancels its window and ignores later notifications", () => {
  const { scheduled, timers } = manualTimers();
  let wakes = 0;
  const batcher = new WakeBatcher(() => wakes++, { timers });
  batcher.notify();
  batcher.close();
  assert.equal(scheduled[0].cancelled, true);
  scheduled[0].fire();
  batcher.notify();
  assert.equal(wakes, 0);
  assert.equal(scheduled.length, 1);
});

Deno.test("a commit is acknowledged while its wake window is still open", async () => {
  const { scheduled, timers } = manualTimers();
  const journal = new MemoryJournal();
  await journal.createSession({ id: "s", createdAt: Date.now(), tools: [] });
  const batcher = new WakeBatcher(() => {}, { timers });
  const stop = new AbortController();
  let guard: ReturnType<typeof setTimeout> | undefined;
  const following = (async () => {
    for await (const _record of journal.subscribe("s", { signal: stop.signal })) batcher.notify();
  })();
  try {
    const acknowledged = await Promise.race([
      (async () => {
        const sequences = [];
        for (let call = 1; call <= 3; call++) {
          sequences.push((await journal.append("s", [{ kind: "tool_returned", call }]))[0].sequence);
          await new Promise((resolve) => setTimeout(resolve, 0));
        }
        return sequences;
      })(),
      new Promise<never>((_, reject) => {
        guard = setTimeout(() => reject(new Error("a commit waited for the wake")), 5_000);
      }),
    ]);
    assert.deepEqual(acknowledged, [1, 2, 3]);
    assert.equal(scheduled.length, 1, "the three commits share one wake window");
    assert.equal(batcher.pending, true, "the window has not fired, yet every commit was acknowledged");
  } finally {
    clearTimeout(guard);
    stop.abort();
    batcher.close();
    await following;
    await journal.close();
  }
});

Deno.test("a user message starts the Agentloop at once; only background results wait for the wake window", async () => {
  const held: number[] = [];
  const realSetTimeout = globalThis.setTimeout;
  // Wake windows are recorded and never fire, so a reply proves the loop did not wait for one.
  globalThis.setTimeout = ((fire: () => void, delay?: number) => {
    if (delay === WAKE_BATCH_MS) {
      held.push(delay);
      return realSetTimeout(() => {}, 0);
    }
    return realSetTimeout(fire, delay);
  }) as typeof setTimeout;
  const brain = new Brain();
  let guard: ReturnType<typeof setTimeout> | undefined;
  try {
    const provider = new ScriptedProvider(["first", "second"]);
    const session = await brain.sessions.create({ model: { provider, model: "m" } });
    const replies = await Promise.race([
      (async () => [(await session.send("one")).content, (await session.send("two")).content])(),
      new Promise<never>((_, reject) => {
        guard = realSetTimeout(() => reject(new Error("send waited for a wake window")), 10_000);
      }),
    ]);
    assert.deepEqual(replies, ["first", "second"]);
    assert.deepEqual(held, [], "no wake window was opened for a user message");
  } finally {
    clearTimeout(guard);
    globalThis.setTimeout = realSetTimeout;
    await brain.close();
  }
});
