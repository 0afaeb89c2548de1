import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, tool } from "../../mod.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";

Deno.test("1,000 concurrent calls over one connection: none lost, none duplicated", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  await using brain = new Brain({ url: server.url, serverToken: "operator-secret", token: "many-token", host: "many" });
  const seen = new Map<number, number>();
  const double = tool({
    name: "double",
    description: "Doubles n after an event.",
    input: z.object({ n: z.number().int() }),
    run: async ({ n }, ctx) => {
      seen.set(n, (seen.get(n) ?? 0) + 1);
      await ctx.emit("doubling", { n });
      return ctx.finish(n * 2);
    },
  });
  const session = await brain.sessions.create({ tools: [double()] });
  const count = 1_000;
  const ends = await Promise.all(Array.from({ length: count }, (_, n) => session.call("double", { n })));
  ends.forEach((end, n) => assert.deepEqual([end.cause, end.outcome], ["finish", { status: "ok", value: n * 2 }]));
  assert.equal(new Set(ends.map((end) => end.call)).size, count);
  assert.equal(seen.size, count);
  assert.ok([...seen.values()].every((times) => times === 1), "each call ran exactly once");
  const records = await session.read();
  const kinds = (kind: string) => records.filter((record) => record.kind === kind).length;
  assert.deepEqual([kinds("tool_call_started"), kinds("tool_event"), kinds("tool_call_finished")], [
    count,
    count,
    count,
  ]);
  assert.equal(server.connections, 1);
});

Deno.test("several sessions and Tools of one Brain client share one connection until close", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  await using brain = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "shared-token",
    host: "shared",
  });
  const named = (name: string) =>
    tool({ name, description: `Answers ${name}.`, input: z.object({}), run: (_input, ctx) => ctx.finish(name) });
  const first = await brain.sessions.create({ tools: [named("a")(), named("b")()] });
  const second = await brain.sessions.create({ tools: [named("a")()] });
  const ends = await Promise.all([first.call("a", {}), first.call("b", {}), second.call("a", {})]);
  assert.deepEqual(ends.map((end) => end.outcome), [
    { status: "ok", value: "a" },
    { status: "ok", value: "b" },
    { status: "ok", value: "a" },
  ]);
  assert.equal(server.connections, 1);
  await first.end();
  assert.deepEqual(
    (await second.call("a", {})).outcome,
    { status: "ok", value: "a" },
    "the connection outlives a session",
  );
  await brain.close();
  assert.equal(server.dropHost("shared"), false, "close released the shared connection");
  await assert.rejects(brain.sessions.list(), hasCode("brain_closed"));
});

Deno.test("a client whose session creation failed still closes in finally and releases its connection", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  const ping = tool({
    name: "ping",
    description: "Pong.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish("pong"),
  });
  await using owner = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "owner-token",
    host: "owner",
  });
  await using brain = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "failing-token",
    host: "failing",
  });
  await owner.sessions.create({ id: "mine", tools: [ping()] });
  let failure: unknown;
  try {
    await brain.sessions.create({ id: "taken", tools: [ping()] });
    await brain.sessions.create({ id: "taken", tools: [ping()] });
  } catch (error) {
    failure = error;
  } finally {
    await brain.close();
  }
  assert.equal(failure instanceof BrainError && failure.code, "session_exists");
  assert.equal(server.dropHost("failing"), false, "the failed client's connection is closed");
  assert.equal(server.dropHost("owner"), true, "the other client is unaffected");
});
