/**
 * The application reattachment recipe: a session outlives the process that
 * created it, and a restarted application restores its Tools' handlers.
 *
 * ```sh
 * export BRAIN_HOST_TOKEN=$(deno eval 'console.log(crypto.randomUUID())')
 * flags="--allow-read=. --allow-write=.tmp --allow-env=BRAIN_HOST_TOKEN"
 * mkdir -p .tmp
 * deno run $flags examples/reattach.ts start .tmp/reattach.kv   # prints the session id; stop it with Ctrl-C
 * deno run $flags examples/reattach.ts resume .tmp/reattach.kv SESSION_ID
 * ```
 *
 * The first process creates the session under the registered host's identity,
 * answers one lookup and starts an export that is still running when the
 * process stops. The second reopens the journal: an export in flight when the
 * process died has ended `unknown` (after Ctrl-C, a clean shutdown, `cancelled`)
 * and is never run again; the same Tool declarations restore the handlers,
 * and new calls run as usual.
 */
import { z } from "zod";
import { Brain, type CallEnd, type HostCredentials, tool } from "../mod.ts";

/** Times each Tool ran in this process; a restored handler never replays an old command. */
export const runs = { lookup: 0, export_report: 0 };

const lookup = tool({
  name: "lookup",
  description: "Look up one customer.",
  input: z.object({ id: z.string() }),
  output: z.object({ value: z.string() }).nullable(),
  run: ({ id }, ctx) => {
    runs.lookup++;
    return ctx.finish(id === "7" ? { value: "Ada Lovelace" } : null);
  },
});

const exportReport = tool({
  name: "export_report",
  description: "Export a long report in the background.",
  input: z.object({ month: z.string() }),
  run: async ({ month }, ctx) => {
    runs.export_report++;
    await ctx.emit("export_started", { month });
    // Returns at once; the export goes on in the background until it finishes or the call ends.
    let rows = 0;
    const work = setInterval(() => ctx.emit("export_progress", { rows: rows += 1000 }).catch(() => {}), 1_000);
    ctx.signal.addEventListener("abort", () => clearInterval(work));
  },
});

/** The same Tool declarations, placed the same way, every time the application starts. */
export function placedTools() {
  return [lookup(), exportReport()];
}

/** The registered host's identity and secret; Brain keeps only the secret's hash. */
export function hostCredentials(): HostCredentials {
  const token = Deno.env.get("BRAIN_HOST_TOKEN");
  if (!token) throw new Error("set BRAIN_HOST_TOKEN to the host's secret token");
  return { id: "reattach-example", token };
}

/** How long a Brain's hold on its sessions lasts unrenewed: a resumed process takes over that long after a crash. */
const LEASE_MS = 2_000;

/** First run: creates the session, answers a lookup and leaves an export in flight. Returns the open Brain. */
export async function start(path: string): Promise<{ brain: Brain; sessionId: string; lookup: CallEnd }> {
  const brain = await Brain.open({ path, leaseMs: LEASE_MS });
  try {
    const session = await brain.sessions.create({ tools: placedTools(), host: hostCredentials() });
    const answered = await session.call("lookup", { id: "7" });
    await session.start("export_report", { month: "2026-11" });
    return { brain, sessionId: session.id, lookup: answered };
  } catch (error) {
    await brain.close();
    throw error;
  }
}

/** After a restart: reattaches the handlers, reports how the export ended, and makes a new call. */
export async function resume(path: string, sessionId: string) {
  const brain = await Brain.open({ path, leaseMs: LEASE_MS });
  try {
    // A crashed first run still holds the session until its lease ends: wait for it rather than fail `session_owned`.
    const session = await brain.sessions.get(sessionId, {
      tools: placedTools(),
      host: hostCredentials(),
      waitMs: 2 * LEASE_MS,
    });
    const history = await session.read();
    const exported = history.find((record) => record.kind === "tool_call_started" && record.tool === "export_report");
    const exportEnd = history.find((record) =>
      record.kind === "tool_call_finished" && record.call === exported?.sequence
    );
    const lookupAgain = await session.call("lookup", { id: "9" });
    return { exportEnd, lookupAgain, runs: { ...runs } };
  } finally {
    await brain.close();
  }
}

if (import.meta.main) {
  const [command, path, sessionId] = Deno.args;
  if (command === "start" && path) {
    const { brain, sessionId: id, lookup } = await start(path);
    console.log(JSON.stringify({ sessionId: id, lookup: lookup.outcome }));
    console.error("the export is in flight; stop this process (Ctrl-C, or kill -9 for a crash), then resume");
    // Ctrl-C shuts down cleanly: closing the Brain ends the export `cancelled`. A crash leaves it to end `unknown`.
    Deno.addSignalListener("SIGINT", () => brain.close().then(() => Deno.exit(130)));
  } else if (command === "resume" && path && sessionId) {
    console.log(JSON.stringify(await resume(path, sessionId)));
  } else {
    console.error("usage: examples/reattach.ts start PATH | resume PATH SESSION_ID");
    Deno.exit(2);
  }
}
