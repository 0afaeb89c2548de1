import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainError, tool } from "../../mod.ts";
import { PostgresJournal } from "../../src/journal/postgres.ts";
import { startPostgres } from "../_support/postgres.ts";
import { type Child, spawnDeno } from "./child.ts";
import { hostSessionKey } from "../../src/util/names.ts";

const LEASE_MS = 1_000;
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

Deno.test("a cluster of 3 servers on one PostgreSQL: SIGKILL the owner mid-call, a survivor takes the session over", async () => {
  await using pg = await startPostgres();
  const servers = [0, 1, 2].map(() =>
    spawnDeno(
      "src/host/server/serve.ts",
      ["--port", "0", "--journal", pg.url, "--lease-ms", `${LEASE_MS}`],
      SERVE_PERMISSIONS,
      { BRAIN_SERVER_TOKEN: "operator-secret" },
    )
  );
  const invocations: number[] = [];
  const started = Promise.withResolvers<void>();
  const stopped = Promise.withResolvers<unknown>();
  const hold = tool({
    name: "hold",
    description: "Holds until its signal aborts.",
    input: z.object({}),
    run: async (_input, ctx) => {
      invocations.push(ctx.sequence);
      started.resolve();
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      stopped.resolve(ctx.signal.reason);
    },
  });
  const quick = tool({
    name: "quick",
    description: "Finishes at once.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish("quick"),
  });
  const journal = await PostgresJournal.open(pg.url);
  try {
    const [first, ...others] = await Promise.all(servers.map(listening));
    const brain = new Brain({
      url: first,
      cluster: others,
      token: "cluster-token",
      host: "app",
      serverToken: "operator-secret",
    });
    try {
      const session = await brain.sessions.create({ id: "clustered", tools: [hold(), quick()] });
      const call = await session.start("hold", {});
      await started.promise;
      servers[0].process.kill("SIGKILL");
      const killedAt = Date.now();
      await servers[0].process.status;
      assert.equal((await stopped.promise as BrainError).code, "connection_lost");

      // The host moves to a survivor, which waits out the dead owner's lease and ends its call unknown, once.
      const end = await call.ended;
      assert.deepEqual([end.cause, end.outcome.status], ["unknown", "unknown"]);
      const records = await journal.read(hostSessionKey("app", "clustered"));
      const terminals = records.filter((record) =>
        record.kind === "tool_call_finished" && record.call === call.sequence
      );
      assert.equal(terminals.length, 1);
      const takeoverMs = terminals[0].at - killedAt;
      assert.ok(takeoverMs <= LEASE_MS + 1_000 + 2_000, `a survivor took over ${takeoverMs} ms after the kill`);

      assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
      assert.deepEqual(invocations, [call.sequence], "the lost call was never dispatched again");
    } finally {
      await brain.close();
    }
  } finally {
    await journal.close();
    for (const server of servers.slice(1)) {
      server.process.kill("SIGTERM");
      await server.process.status;
    }
  }
});
