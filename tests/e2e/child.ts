import { lines } from "./lines.ts";

/** Longest a child process may run before it is killed, so a stalled child never hangs a test. */
const CHILD_DEADLINE_MS = 60_000;

/** A child Deno process whose stdout is read line by line. */
export interface Child {
  process: Deno.ChildProcess;
  /** The next stdout line, or undefined at the end of output. */
  line(): Promise<string | undefined>;
}

/**
 * Runs `script` (relative to the repository) with `deno run` and only loopback network access by default,
 * with `env` added to the inherited environment.
 */
export function spawnDeno(
  script: string,
  args: string[],
  permissions: string[] = ["--allow-net=127.0.0.1"],
  env: Record<string, string> = {},
): Child {
  const process = new Deno.Command("deno", {
    args: ["run", "--quiet", ...permissions, script, ...args],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
    signal: AbortSignal.timeout(CHILD_DEADLINE_MS),
  }).spawn();
  const output = lines(process.stdout);
  return { process, line: async () => (await output.next()).value ?? undefined };
}

/** Reads lines until one parses as JSON with `key`, and returns that object. */
export async function waitFor(child: Child, key: string): Promise<Record<string, unknown>> {
  for (let line = await child.line(); line !== undefined; line = await child.line()) {
    const parsed = JSON.parse(line);
    if (key in parsed) return parsed;
  }
  throw new Error(`the child's output ended before a line with ${key}`);
}
