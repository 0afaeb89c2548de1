import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { FlakyJournal } from "../_support/flaky_journal.ts";
import { hasCode } from "../_support/has_code.ts";
import { withDeadline } from "../_support/deadline.ts";
import { gate } from "../_support/gate.ts";
import { scratchDir } from "../_support/scratch.ts";
import { servedBrain } from "../_support/served_brain.ts";

const dir = scratchDir("server-shutdown");
const serverToken = "operator-secret";

/** A Tool that runs until its call ends, telling `started` once it runs. */
function waiting() {
  const started = gate();
  const placed = tool({
    name: "waiting",
    description: "Runs until its call ends.",
    input: z.object({}),
    run: async (_input, ctx) => {
      started.open();
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
    },
  });
  return { placed, started: started.wait };
}

Deno.test("a server shutting down ends its sessions first: a remote caller without a deadline hears its call ended cancelled, though the server never comes back", async () => {
  const server = await servedBrain({ serverToken });
  await using brain = new Brain({
    url: server.url,
    serverToken,
    token: "t",
    host: "shutdown",
    maxReconnectDelayMs: 100,
  });
  const { placed, started } = waiting();
  const session = await brain.sessions.create({ tools: [placed()] });
  const ended = session.call("waiting", {});
  await started;
  await server.shutdown();
  const end = await withDeadline(ended, "the caller to hear its call's end");
  assert.equal(end.cause, "cancelled");
});

Deno.test("a server shutting down whose store cannot commit its calls' ends tells each remote caller so (storage_unavailable, as embedded) before the link goes", async () => {
  const journal = await FlakyJournal.at(`${dir}/failing-ends.kv`);
  const server = await servedBrain({ serverToken, journal });
  await using brain = new Brain({
    url: server.url,
    serverToken,
    token: "t",
    host: "failing",
    maxReconnectDelayMs: 100,
  });
  const { placed, started } = waiting();
  const session = await brain.sessions.create({ tools: [placed()] });
  const ended = session.call("waiting", {});
  await started;
  journal.failures = 100;
  const told = assert.rejects(
    withDeadline(ended, "the caller to be told its end failed"),
    hasCode("storage_unavailable"),
  );
  await server.shutdown();
  await told;
});
