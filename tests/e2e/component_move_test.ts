import assert from "node:assert/strict";
import { Brain } from "../../mod.ts";
import type { HostConnectionEvent } from "../../src/host/client/connection.ts";
import type { Journal } from "../../src/journal/journal.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { PostgresJournal } from "../../src/journal/postgres.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { closing } from "../_support/closing.ts";
import { probeTool } from "../_support/components.ts";
import { withDeadline } from "../_support/deadline.ts";
import { startPostgres } from "../_support/postgres.ts";
import { scratchDir } from "../_support/scratch.ts";
import { SERVE_PERMISSIONS, SERVER_TOKEN, serverProcess } from "../_support/server_process.ts";
import { heldCall } from "./fixtures/held_call.ts";

const LEASE_MS = 1_000;
const dir = scratchDir("component_move");

/** A `deno task serve` process over `journal` that runs uploaded Components, with a transpile cache of its own. */
function componentServer(journal: string) {
  const cache = `${dir}/cache-${crypto.randomUUID()}`;
  return serverProcess(["--port", "0", "--journal", journal, "--lease-ms", `${LEASE_MS}`, "--component-cache", cache], {
    permissions: [...SERVE_PERMISSIONS, "--allow-run"],
  });
}

/**
 * The owner of a session holding a Component and a host Tool is SIGKILLed: the client moves to the other server,
 * which had never seen the Component, uploads it there while reattaching, and the session goes on there.
 */
async function moveWithTheSession(store: string, journal: Journal): Promise<void> {
  const [owner, survivor] = await Promise.all([componentServer(store), componentServer(store)]);
  await using _owner = owner;
  await using _survivor = survivor;
  const attachedThere = Promise.withResolvers<void>();
  const events: HostConnectionEvent[] = [];
  await using brain = new Brain({
    url: owner.url,
    cluster: [survivor.url],
    token: "move-token",
    host: "app",
    serverToken: SERVER_TOKEN,
    onConnection: (event) => {
      events.push(event);
      if (event.type === "attached" && event.url === survivor.url) attachedThere.resolve();
    },
  });
  const tools = [probeTool("echo")(), ...heldCall().tools];
  const session = await brain.sessions.create({ id: "moving", tools });
  assert.deepEqual((await session.call("echo", { status: "ok", value: 1 })).outcome, { status: "ok", value: 1 });

  assert.equal((await owner.kill("SIGKILL")).signal, "SIGKILL");
  // The survivor takes the session once the dead owner's lease ended, placing the Component the attach names.
  await withDeadline(attachedThere.promise, "the client to reattach on the survivor", 10 * LEASE_MS);
  assert.deepEqual((await session.call("echo", { status: "ok", value: 2 })).outcome, { status: "ok", value: 2 });
  assert.deepEqual((await session.call("quick", {})).outcome, { status: "ok", value: "quick" });
  assert.deepEqual(events.filter((event) => event.type === "session_closed"), [], "no handle was given up");

  const key = hostSessionKey("app", "moving");
  const records = await journal.read(key);
  const calls = records.flatMap((record) => record.kind === "tool_call_started" ? [[record.tool, record.input]] : []);
  assert.deepEqual(calls, [["echo", { status: "ok", value: 1 }], ["echo", { status: "ok", value: 2 }], ["quick", {}]]);
  const ends = records.flatMap((record) => record.kind === "tool_call_finished" ? [record.cause] : []);
  assert.deepEqual(ends, ["finish", "finish", "finish"]);
  const health = await (await fetch(`${survivor.url}/v1/health`)).json();
  assert.equal((await journal.holder(key))?.owner, health.node, "the survivor owns the session now");
}

Deno.test("two servers on one KV file: the owner of a session with a Component is SIGKILLed, the survivor reopens it with the Component the client uploads again", async () => {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  await using journal = closing(await KvJournal.open(path));
  await moveWithTheSession(path, journal);
});

Deno.test("two servers on one PostgreSQL: the owner of a session with a Component is SIGKILLed, the survivor reopens it with the Component the client uploads again", async () => {
  await using pg = await startPostgres();
  await using journal = closing(await PostgresJournal.open(pg.url));
  await moveWithTheSession(pg.url, journal);
});
