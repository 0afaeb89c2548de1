import { InputStream, OutputStream } from "./streams.ts";

/** Thrown by `wasi:cli/exit.exit`: the guest ended its own run. */
export class GuestExit extends Error {
  constructor(readonly ok: boolean) {
    super(`the Component called exit(${ok ? "ok" : "err"})`);
  }
}

class TerminalInput {}
class TerminalOutput {}

/**
 * `wasi:cli` for a guest: no arguments, only the environment variables its
 * grant names (those that are set), an empty stdin, and stdout and stderr
 * delivered to `output`. There is no terminal.
 */
export function cliImports(
  env: readonly string[],
  output: (stream: "stdout" | "stderr", text: string) => void,
): Record<string, unknown> {
  const decoder = new TextDecoder();
  const stdout = new OutputStream((bytes) => output("stdout", decoder.decode(bytes)));
  const stderr = new OutputStream((bytes) => output("stderr", decoder.decode(bytes)));
  const stdin = new InputStream(() => undefined);
  const none = () => undefined;
  return {
    "wasi:cli/environment": {
      getEnvironment: () =>
        env.flatMap((name) => {
          const value = Deno.env.get(name);
          return value === undefined ? [] : [[name, value]];
        }),
      getArguments: () => [],
      initialCwd: () => "/",
    },
    "wasi:cli/exit": {
      exit: (status: { tag: string }) => {
        throw new GuestExit(status.tag === "ok");
      },
      exitWithCode: (code: number) => {
        throw new GuestExit(code === 0);
      },
    },
    "wasi:cli/stdin": { getStdin: () => stdin },
    "wasi:cli/stdout": { getStdout: () => stdout },
    "wasi:cli/stderr": { getStderr: () => stderr },
    "wasi:cli/terminal-input": { TerminalInput },
    "wasi:cli/terminal-output": { TerminalOutput },
    "wasi:cli/terminal-stdin": { getTerminalStdin: none },
    "wasi:cli/terminal-stdout": { getTerminalStdout: none },
    "wasi:cli/terminal-stderr": { getTerminalStderr: none },
  };
}
