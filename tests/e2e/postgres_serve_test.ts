import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { startPostgres } from "../_support/postgres.ts";
import { SERVER_TOKEN, serverProcess } from "../_support/server_process.ts";

const greet = tool({
  name: "greet",
  description: "Greets.",
  input: z.object({ name: z.string() }),
  run: ({ name }, ctx) => ctx.finish(`hello ${name}`),
});

Deno.test("deno task serve --journal postgres://...: two servers share one database's sessions", async () => {
  await using pg = await startPostgres();
  await using first = await serverProcess(["--port", "0", "--journal", pg.url]);
  await using second = await serverProcess(["--port", "0", "--journal", pg.url]);
  {
    await using app = new Brain({ url: first.url, token: "app-token", host: "app", serverToken: SERVER_TOKEN });
    const session = await app.sessions.create({ id: "shared", tools: [greet()] });
    assert.deepEqual((await session.call("greet", { name: "Ada" })).outcome, { status: "ok", value: "hello Ada" });
  }
  await using other = new Brain({ url: second.url, token: "app-token", host: "app" });
  assert.deepEqual((await other.sessions.list()).map((meta) => meta.id), ["shared"]);
  const reader = await other.sessions.get("shared");
  const records = await reader.read();
  assert.equal(records[0].kind, "tool_call_started");
  assert.equal(records.at(-1)?.kind, "tool_call_finished");
  const again = await other.sessions.get("shared", { tools: [greet()] });
  assert.deepEqual((await again.call("greet", { name: "Bo" })).outcome, { status: "ok", value: "hello Bo" });
});
