import assert from "node:assert/strict";
import { hashToken } from "../../src/embedded/host_token.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { ORPHANED_MESSAGE } from "../../src/embedded/recover.ts";
import { lines } from "../_support/lines.ts";
import { scratchDir } from "../_support/scratch.ts";
import { denoCommand } from "../_support/spawn_deno.ts";

const dir = scratchDir("reattach_e2e");

/** The example run with `args`; a run that outlives its deadline is killed. */
function example(args: string[], token: string): Deno.Command {
  return denoCommand(
    ["run", "--allow-read=.", "--allow-write=.tmp", "--allow-env=BRAIN_HOST_TOKEN", "examples/reattach.ts", ...args],
    { env: { BRAIN_HOST_TOKEN: token }, stdout: "piped", stderr: "piped" },
  );
}

async function firstLine(child: Deno.ChildProcess): Promise<string> {
  for await (const line of lines(child.stdout)) return line;
  throw new Error(`no output: ${await new Response(child.stderr).text()}`);
}

Deno.test("examples/reattach.ts: a killed process's session is reattached by the next one", async () => {
  const path = `${dir}/reattach.kv`;
  const token = crypto.randomUUID();

  await using first = example(["start", path], token).spawn();
  const stderr = new Response(first.stderr).text();
  const started = JSON.parse(await firstLine(first));
  assert.deepEqual(started.lookup, { status: "ok", value: { value: "Ada Lovelace" } });
  first.kill("SIGKILL");
  assert.equal((await first.status).signal, "SIGKILL");
  await stderr;

  const journal = await KvJournal.open(path);
  try {
    const meta = await journal.getSession(started.sessionId);
    assert.deepEqual(meta?.host, { id: "reattach-example", tokenHash: await hashToken(token) });
    assert.deepEqual(
      (await journal.openCalls(started.sessionId)).map((call) => call.kind === "tool_call_started" && call.tool),
      ["export_report"],
    );
  } finally {
    await journal.close();
  }

  const wrong = await example(["resume", path, started.sessionId], "not-the-token").output();
  assert.notEqual(wrong.code, 0);
  assert.match(new TextDecoder().decode(wrong.stderr), /unauthorized|does not match/);

  const second = await example(["resume", path, started.sessionId], token).output();
  assert.equal(second.code, 0, new TextDecoder().decode(second.stderr));
  const resumed = JSON.parse(new TextDecoder().decode(second.stdout));
  assert.equal(resumed.exportEnd.cause, "unknown");
  assert.deepEqual(resumed.exportEnd.outcome, { status: "unknown", message: ORPHANED_MESSAGE });
  assert.deepEqual(resumed.lookupAgain.outcome, { status: "ok", value: null });
  assert.deepEqual(resumed.runs, { lookup: 1, export_report: 0 }, "the new process ran only the new command");
});
