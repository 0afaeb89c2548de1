/**
 * Child processes of `parent` (this test process by default) that are Component
 * sandboxes and still alive (not zombies); with `onCpu`, only those on a CPU right now.
 */
export function runningSandboxes(onCpu = false, parent = Deno.pid): Promise<number[]> {
  return runningChildren("sandbox_main.ts", onCpu, parent);
}

/** Child processes of `parent` running `script` and still alive; with `onCpu`, only those on a CPU right now. */
export async function runningChildren(script: string, onCpu = false, parent = Deno.pid): Promise<number[]> {
  const { stdout } = await new Deno.Command("ps", { args: ["-eo", "pid=,ppid=,stat=,args="] }).output();
  return new TextDecoder().decode(stdout).split("\n").map((line) => line.trim().split(/\s+/))
    .filter(([, ppid, stat = "Z", ...args]) =>
      Number(ppid) === parent && !stat.startsWith("Z") && (!onCpu || stat.startsWith("R")) &&
      args.some((arg) => arg.endsWith(script))
    )
    .map(([pid]) => Number(pid));
}

/**
 * Resolves once `check` holds, polling every 10 ms; rejects after `withinMs`. Only for operating-system
 * state such as a child process being gone, which has no event to wait on; records have `until`.
 */
export async function within(withinMs: number, what: string, check: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`${what} did not happen within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
