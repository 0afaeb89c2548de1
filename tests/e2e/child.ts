/** A child Deno process whose stdout is read line by line. */
export interface Child {
  process: Deno.ChildProcess;
  /** The next stdout line, or undefined at the end of output. */
  line(): Promise<string | undefined>;
}

/** Runs `script` (relative to the repository) with `deno run` and only loopback network access. */
export function spawnDeno(script: string, args: string[], permissions: string[] = ["--allow-net=127.0.0.1"]): Child {
  const process = new Deno.Command("deno", {
    args: ["run", "--quiet", ...permissions, script, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const text = process.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const line = async (): Promise<string | undefined> => {
    while (!buffer.includes("\n")) {
      const { value, done } = await text.read();
      if (done) {
        const rest = buffer;
        buffer = "";
        return rest.length > 0 ? rest : undefined;
      }
      buffer += value;
    }
    const end = buffer.indexOf("\n");
    const next = buffer.slice(0, end);
    buffer = buffer.slice(end + 1);
    return next;
  };
  return { process, line };
}

/** Reads lines until one parses as JSON with `key`, and returns that object. */
export async function waitFor(child: Child, key: string): Promise<Record<string, unknown>> {
  for (let line = await child.line(); line !== undefined; line = await child.line()) {
    const parsed = JSON.parse(line);
    if (key in parsed) return parsed;
  }
  throw new Error(`the child's output ended before a line with ${key}`);
}
