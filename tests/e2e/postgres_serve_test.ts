import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { startPostgres } from "../_support/postgres.ts";
import { type Child, spawnDeno } from "./child.ts";

/** The permissions of `deno task serve`, with the network narrowed to loopback as in deno.json. */
const SERVE_PERMISSIONS = [
  "--allow-net=127.0.0.1",
  "--allow-env=BRAIN_PORT,BRAIN_PATH,BRAIN_MODEL_URL,BRAIN_MODEL,BRAIN_MODEL_KEY,BRAIN_SERVER_TOKEN,BRAIN_HOST_TOKENS,BRAIN_LEASE_MS,BRAIN_JOURNAL,PG*",
  "--allow-read=.tmp",
  "--allow-write=.tmp",
];

async function listening(server: Child): Promise<string> {
  const url = /^Brain listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(await server.line() ?? "")?.[1];
  assert.ok(url, "the server printed its URL");
  return url;
}

const greet = tool({
  name: "greet",
  description: "Greets.",
  input: z.object({ name: z.string() }),
  run: ({ name }, ctx) => ctx.finish(`hello ${name}`),
});

Deno.test("deno task serve --journal postgres://...: two servers share one database's sessions", async () => {
  await using pg = await startPostgres();
  const serve = () =>
    spawnDeno("src/host/server/serve.ts", ["--port", "0", "--journal", pg.url], SERVE_PERMISSIONS, {
      BRAIN_SERVER_TOKEN: "operator-secret",
    });
  const servers = [serve(), serve()];
  try {
    const [first, second] = await Promise.all(servers.map(listening));
    const app = new Brain({ url: first, token: "app-token", host: "app", serverToken: "operator-secret" });
    try {
      const session = await app.sessions.create({ id: "shared", tools: [greet()] });
      assert.deepEqual((await session.call("greet", { name: "Ada" })).outcome, { status: "ok", value: "hello Ada" });
    } finally {
      await app.close();
    }
    const other = new Brain({ url: second, token: "app-token", host: "app" });
    try {
      assert.deepEqual((await other.sessions.list()).map((meta) => meta.id), ["shared"]);
      const reader = await other.sessions.get("shared");
      const records = await reader.read();
      assert.equal(records[0].kind, "tool_call_started");
      assert.equal(records.at(-1)?.kind, "tool_call_finished");
      const again = await other.sessions.get("shared", { tools: [greet()] });
      assert.deepEqual((await again.call("greet", { name: "Bo" })).outcome, { status: "ok", value: "hello Bo" });
    } finally {
      await other.close();
    }
  } finally {
    for (const server of servers) {
      server.process.kill("SIGTERM");
      await server.process.status;
    }
  }
});
