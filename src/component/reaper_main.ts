/**
 * The reaper: one child process per Brain that kills the Brain's sandboxes
 * when the Brain's process dies without closing them (a crash, SIGKILL). A
 * spinning guest cannot notice its parent is gone; the reaper can: Brain
 * writes `+pid` and `-pid` lines to its stdin, and when that pipe closes it
 * SIGKILLs every pid still listed and exits. It runs only this code, with the
 * run permission that `Deno.kill` needs.
 *
 * @module
 */
import { lines } from "../util/lines.ts";

async function main(): Promise<void> {
  const pids = new Set<number>();
  for await (const line of lines(Deno.stdin.readable)) {
    const pid = Number(line.slice(1));
    if (!Number.isSafeInteger(pid) || pid <= 0) continue;
    if (line.startsWith("+")) pids.add(pid);
    else pids.delete(pid);
  }
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

if (import.meta.main) await main();
