import { lines } from "./lines.ts";
import { spawnDeno } from "./spawn_deno.ts";

/**
 * A script run by this Deno whose stdout is read line by line; `await using` stops it if it still runs
 * (SIGTERM, then SIGKILL after a grace period).
 */
export interface DenoScript {
  readonly process: Deno.ChildProcess;
  /** The next stdout line, or undefined at the end of output. */
  line(): Promise<string | undefined>;
  /** Sends `signal` (SIGTERM by default) to its pid unless it has exited, and waits for its status. */
  kill(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Options of {@linkcode denoScript}. */
export interface DenoScriptOptions {
  /** Its permission flags; loopback network only by default. */
  permissions?: string[];
  /** Added to the inherited environment. */
  env?: Record<string, string>;
}

/**
 * Runs `script` (relative to the repository) with `deno run --quiet` on `Deno.execPath()`.
 *
 * For example:
 *   await using app = denoScript("tests/e2e/fixtures/host_app.ts", [url]);
 *   const first = await app.line();
 */
export function denoScript(
  script: string,
  args: string[],
  { permissions = ["--allow-net=127.0.0.1"], env = {} }: DenoScriptOptions = {},
): DenoScript {
  const process = spawnDeno(["run", "--quiet", ...permissions, script, ...args], {
    env,
    stdout: "piped",
    stderr: "inherit",
  });
  const output = lines(process.stdout);
  const kill = async (signal: Deno.Signal = "SIGTERM") => {
    try {
      process.kill(signal);
    } catch {
      // It has exited already.
    }
    return await process.status;
  };
  return {
    process,
    line: async () => (await output.next()).value ?? undefined,
    kill,
    [Symbol.asyncDispose]: async () => {
      await stop(process, kill);
      await output.return(undefined);
    },
  };
}

/** How long a disposed child may take to exit after SIGTERM before it is killed with SIGKILL. */
const TERM_GRACE_MS = 5_000;

/** SIGTERM, then SIGKILL if the child has not exited within {@linkcode TERM_GRACE_MS}: disposing never hangs. */
async function stop(process: Deno.ChildProcess, kill: (signal?: Deno.Signal) => Promise<Deno.CommandStatus>) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const graceOver = new Promise<"late">((resolve) => timer = setTimeout(() => resolve("late"), TERM_GRACE_MS));
  try {
    if (await Promise.race([kill("SIGTERM"), graceOver]) === "late") await kill("SIGKILL");
  } finally {
    clearTimeout(timer);
  }
  await process.status;
}

/** Reads lines until one parses as JSON with `key`, and returns that object. */
export async function waitForKey(child: DenoScript, key: string): Promise<Record<string, unknown>> {
  for (let line = await child.line(); line !== undefined; line = await child.line()) {
    const parsed = JSON.parse(line);
    if (key in parsed) return parsed;
  }
  throw new Error(`the child's output ended before a line with ${key}`);
}
