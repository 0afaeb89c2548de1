import assert from "node:assert/strict";
import { Brain, type BrainError } from "../../mod.ts";
import { PostgresJournal } from "../../src/journal/postgres.ts";
import { closing } from "../_support/closing.ts";
import { startPostgres } from "../_support/postgres.ts";
import { SERVER_TOKEN, serverProcess } from "../_support/server_process.ts";
import { heldCall } from "./fixtures/held_call.ts";
import { hostSessionKey } from "../../src/util/names.ts";

const LEASE_MS = 1_000;

Deno.test("a cluster of 3 servers on one PostgreSQL: SIGKILL the owner mid-call, a survivor takes the session over", async () => {
  await using pg = await startPostgres();
  const args = ["--port", "0", "--journal", pg.url, "--lease-ms", `${LEASE_MS}`];
  await using first = await serverProcess(args);
  await using second = await serverProcess(args);
  await using third = await serverProcess(args);
  const held = heldCall();
  await using journal = closing(await PostgresJournal.open(pg.url));
  await using brain = new Brain({
    url: first.url,
    cluster: [second.url, third.url],
    token: "cluster-token",
    host: "app",
    serverToken: SERVER_TOKEN,
  });
  const session = await brain.sessions.create({ id: "clustered", tools: held.tools });
  const call = await session.start("hold", {});
  await held.started;
  const killed = first.kill("SIGKILL");
  const killedAt = Date.now();
  await killed;
  assert.equal((await held.stopped as BrainError).code, "connection_lost");

  // The host moves to a survivor, which waits out the dead owner's lease and ends its call unknown, once.
  const end = await call.ended;
  assert.deepEqual([end.cause, end.outcome.status], ["unknown", "unknown"]);
  const records = await journal.read(hostSessionKey("app", "clustered"));
  const terminals = records.filter((record) => record.kind === "tool_call_finished" && record.call === call.sequence);
  assert.equal(terminals.length, 1);
  const takeoverMs = terminals[0].at - killedAt;
  assert.ok(takeoverMs <= LEASE_MS + 1_000 + 2_000, `a survivor took over ${takeoverMs} ms after the kill`);

  assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
  assert.deepEqual(held.invocations, [call.sequence], "the lost call was never dispatched again");
});
