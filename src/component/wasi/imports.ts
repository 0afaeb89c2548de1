import { cliImports } from "./cli.ts";
import { clocksAndRandomImports } from "./clocks_random.ts";
import { workspaceFilesystem } from "./filesystem.ts";
import { InputStream, IoError, OutputStream, poll, Pollable } from "./streams.ts";

/** What a guest's WASI may reach: the grant, as the sandbox sees it. */
export interface WasiScope {
  /** The workspace preopened as `/`, when the grant has one. */
  workspace: string | undefined;
  /** Whether the workspace is writable. */
  write: boolean;
  /** The environment variable names the guest may read. */
  env: string[];
  /** Where the guest's stdout and stderr go. */
  output(stream: "stdout" | "stderr", text: string): void;
}

/** The WASI 0.2 interfaces a sandbox provides, without versions. */
export const WASI_INTERFACES: readonly string[] = [
  "wasi:cli/environment",
  "wasi:cli/exit",
  "wasi:cli/stdin",
  "wasi:cli/stdout",
  "wasi:cli/stderr",
  "wasi:cli/terminal-input",
  "wasi:cli/terminal-output",
  "wasi:cli/terminal-stdin",
  "wasi:cli/terminal-stdout",
  "wasi:cli/terminal-stderr",
  "wasi:clocks/monotonic-clock",
  "wasi:clocks/wall-clock",
  "wasi:random/random",
  "wasi:random/insecure",
  "wasi:random/insecure-seed",
  "wasi:io/error",
  "wasi:io/poll",
  "wasi:io/streams",
  "wasi:filesystem/types",
  "wasi:filesystem/preopens",
];

/** The import object entries for every interface in {@linkcode WASI_INTERFACES}, scoped to `scope`. */
export function wasiImports(scope: WasiScope): Record<string, unknown> {
  const filesystem = workspaceFilesystem(scope.workspace, scope.write);
  return {
    ...cliImports(scope.env, scope.output),
    ...clocksAndRandomImports(),
    "wasi:io/error": { Error: IoError },
    "wasi:io/poll": { Pollable, poll },
    "wasi:io/streams": { InputStream, OutputStream },
    "wasi:filesystem/types": filesystem.types,
    "wasi:filesystem/preopens": filesystem.preopens,
  };
}
