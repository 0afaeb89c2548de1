import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainError, ok, tool } from "../../mod.ts";
import { MemoryJournal } from "../../src/journal/memory.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { hasCode } from "../_support/has_code.ts";

const echo = tool({
  name: "echo",
  description: "Echo.",
  input: z.object({ text: z.string() }),
  run: ({ text }, ctx) => ctx.finish(text),
});

Deno.test("Brain.open gives an embedded Brain over the in-memory journal by default", async () => {
  await using brain = await Brain.open();
  const session = await brain.sessions.create({ tools: [echo()] });
  assert.deepEqual((await session.call("echo", { text: "hi" })).outcome, ok("hi"));
  assert.deepEqual((await brain.sessions.list()).map((meta) => meta.id), [session.id]);
});

Deno.test("sessions advertise their tools; ids are validated and unique", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [echo()], id: "s-1" });
  assert.equal(session.id, "s-1");
  const [meta] = await brain.sessions.list();
  assert.deepEqual(meta.tools[0].inputSchema, echo.inputSchema);
  await assert.rejects(brain.sessions.create({ id: "s-1" }), hasCode("session_exists"));
  await assert.rejects(brain.sessions.create({ id: "../escape" }), hasCode("invalid_argument"));
  await assert.rejects(brain.sessions.create({ tools: [echo(), echo()] }), hasCode("duplicate_tool"));
});

Deno.test("bad call arguments throw before anything is committed", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [echo()] });
  await assert.rejects(session.call("missing", {}), hasCode("unknown_tool"));
  const other = tool({ name: "echo", description: "A test Tool.", input: z.object({}), run: () => {} });
  await assert.rejects(session.call(other(), {}), hasCode("unknown_tool"));
  await assert.rejects(session.call("echo", { text: undefined } as never), hasCode("invalid_input"));
  await assert.rejects(session.call("echo", { text: "x" }, { deadline: NaN }), hasCode("invalid_argument"));
  assert.deepEqual(await session.read(), []);
});

Deno.test("sessions.get opens a handle; without tools it reads but holds no handlers", async () => {
  const journal = new MemoryJournal();
  await using brain = new Brain({ journal });
  const created = await brain.sessions.create({ tools: [echo()] });
  await created.call("echo", { text: "once" });
  const reader = await brain.sessions.get(created.id);
  assert.equal((await reader.read()).length, 3);
  await assert.rejects(reader.call("echo", { text: "again" }), hasCode("unknown_tool"));
  const restored = await brain.sessions.get(created.id, { tools: [echo()] });
  assert.deepEqual((await restored.call("echo", { text: "again" })).outcome, ok("again"));
  await assert.rejects(brain.sessions.get("nope"), hasCode("session_not_found"));
});

Deno.test("reattaching with a different contract fails and names the tool and the difference", async () => {
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [echo()] });
  const changed = tool({
    name: "echo",
    description: "Echo.",
    input: z.object({ text: z.string(), loud: z.boolean() }),
    run: (_input, ctx) => ctx.finish(),
  });
  await assert.rejects(brain.sessions.get(session.id, { tools: [changed()] }), (error) => {
    assert.ok(hasCode("reattach_mismatch")(error));
    assert.match((error as Error).message, /tool echo: its inputSchema differs/);
    return true;
  });
});

Deno.test("deleting a session ends its open calls and removes its records", async () => {
  const hanging = tool({ name: "hang", description: "A test Tool.", input: z.object({}), run: () => {} });
  await using brain = new Brain();
  const session = await brain.sessions.create({ tools: [hanging()] });
  const call = await session.start("hang", {});
  await brain.sessions.delete(session.id);
  assert.equal((await call.ended).cause, "cancelled");
  await assert.rejects(brain.sessions.get(session.id), hasCode("session_not_found"));
});

Deno.test("closing the Brain ends open calls; it refuses work afterwards", async () => {
  const hanging = tool({ name: "hang", description: "A test Tool.", input: z.object({}), run: () => {} });
  const brain = new Brain();
  const session = await brain.sessions.create({ tools: [hanging()] });
  const call = await session.start("hang", {});
  await brain.close();
  assert.equal((await call.ended).cause, "cancelled");
  await assert.rejects(brain.sessions.create(), hasCode("brain_closed"));
});

Deno.test("an embedded Brain's configured models are picked by name; unknown names and bad models are refused", async () => {
  assert.throws(
    () => new Brain({ models: { "": { provider: new ScriptedProvider([]), model: "m" } } }),
    hasCode("invalid_argument"),
  );
  assert.throws(
    () => new Brain({ models: { default: { provider: new ScriptedProvider([]), model: "" } } }),
    hasCode("invalid_argument"),
  );
  const provider = new ScriptedProvider(["Hi there."], { name: "named" });
  await using brain = new Brain({ models: { default: { provider, model: "fixed", credentials: { apiKey: "k" } } } });
  await assert.rejects(brain.sessions.create({ model: "toString" }), hasCode("model_unavailable"));
  const session = await brain.sessions.create({ model: "default" });
  assert.equal((await session.send("Hello")).content, "Hi there.");
  assert.deepEqual([provider.calls[0].model, provider.calls[0].credentials], ["fixed", { apiKey: "k" }]);
  assert.deepEqual((await brain.sessions.list())[0].model, { provider: "named", model: "fixed" });
});

Deno.test("a misspelt Brain option is refused instead of silently giving an in-memory Brain", async () => {
  assert.throws(() => new Brain({ pth: "brain.kv" } as never), (error: BrainError) => {
    assert.equal(error.code, "invalid_argument");
    assert.match(error.message, /^unknown Brain options "pth": the known ones are journal, path,/);
    return true;
  });
  await assert.rejects(
    Brain.open({ pth: "brain.kv" } as never),
    hasCode("invalid_argument"),
  );
  assert.throws(
    () => new Brain({ url: "http://127.0.0.1:1", token: "t", tokn: "x" } as never),
    (error: BrainError) => /^unknown remote Brain options "tokn"/.test(error.message),
  );
});
