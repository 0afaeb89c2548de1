/** Longest a child Deno may run before it is killed, so a stalled child never hangs a test. */
export const CHILD_DEADLINE_MS = 60_000;

/** Options of a child Deno: those of `Deno.Command`, with stdin closed and a 60 s deadline unless given. */
export type DenoOptions = Omit<Deno.CommandOptions, "args">;

/**
 * A `Deno.Command` running this very Deno (`Deno.execPath()`, never `deno` from PATH) with `args`.
 * Its stdin is closed and it is killed after {@linkcode CHILD_DEADLINE_MS} unless `options` say otherwise.
 */
export function denoCommand(args: string[], options: DenoOptions = {}): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    stdin: "null",
    signal: AbortSignal.timeout(CHILD_DEADLINE_MS),
    ...options,
    env: { PATH: pathWithThisDeno(), ...options.env },
    args,
  });
}

/**
 * PATH with this Deno's folder first: a child that starts `deno` itself (a
 * README or example that names it, an MCP server's command) starts this very Deno.
 */
export function pathWithThisDeno(): string {
  const folder = Deno.execPath().replace(/[/\\][^/\\]*$/, "");
  const path = Deno.env.get("PATH");
  return path ? `${folder}${Deno.build.os === "windows" ? ";" : ":"}${path}` : folder;
}

/**
 * Starts this Deno with `args`; `await using` kills the child if it still runs and waits for it.
 *
 * For example:
 *   await using child = spawnDeno(["run", "tests/e2e/fixtures/emitter.ts", path], { stdout: "piped" });
 */
export function spawnDeno(args: string[], options: DenoOptions = {}): Deno.ChildProcess {
  return denoCommand(args, options).spawn();
}

/** Runs this Deno with `args` to its end and returns its output (piped stdout and stderr unless told otherwise). */
export function runDeno(args: string[], options: DenoOptions = {}): Promise<Deno.CommandOutput> {
  return denoCommand(args, { stdout: "piped", stderr: "piped", ...options }).output();
}
