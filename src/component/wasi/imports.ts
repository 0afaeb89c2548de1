import { netAllowed } from "../../env/grants.ts";
import { BlockingNet } from "./blocking_net.ts";
import { cliImports } from "./cli.ts";
import { clocksAndRandomImports } from "./clocks_random.ts";
import { workspaceFilesystem } from "./filesystem.ts";
import { httpImports } from "./http.ts";
import { socketsImports } from "./sockets.ts";
import { InputStream, IoError, OutputStream, poll, Pollable } from "./streams.ts";

/** What a guest's WASI may reach: the grant, as the sandbox sees it. */
export interface WasiScope {
  /** The workspace preopened as `/`, when the grant has one. */
  workspace: string | undefined;
  /** Whether the workspace is writable. */
  write: boolean;
  /** The environment variable names the guest may read. */
  env: string[];
  /** The grant's net allow-list (`host` or `host:port`): the only places HTTP and sockets reach. */
  net: string[];
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
  "wasi:http/types",
  "wasi:http/outgoing-handler",
  "wasi:sockets/network",
  "wasi:sockets/instance-network",
  "wasi:sockets/ip-name-lookup",
  "wasi:sockets/tcp",
  "wasi:sockets/tcp-create-socket",
  "wasi:sockets/udp",
  "wasi:sockets/udp-create-socket",
];

/** A guest's WASI: the import objects, and what ends a call's use of them. */
export interface WasiHost {
  /** The import object entries for every interface in {@linkcode WASI_INTERFACES}. */
  imports: Record<string, unknown>;
  /** Closes the requests and connections a call left open. */
  endCall(): void;
}

/** The WASI a sandbox gives its guests, scoped to `scope`. */
export function wasiHost(scope: WasiScope): WasiHost {
  const filesystem = workspaceFilesystem(scope.workspace, scope.write);
  const net = new BlockingNet();
  const allowed = (host: string, port?: number) =>
    port === undefined
      ? scope.net.some((entry) => entry === host || entry.replace(/:\d+$/, "") === host)
      : netAllowed(`${host}:${port}`, scope.net);
  return {
    imports: {
      ...cliImports(scope.env, scope.output),
      ...clocksAndRandomImports(),
      "wasi:io/error": { Error: IoError },
      "wasi:io/poll": { Pollable, poll },
      "wasi:io/streams": { InputStream, OutputStream },
      "wasi:filesystem/types": filesystem.types,
      "wasi:filesystem/preopens": filesystem.preopens,
      ...httpImports(net, (hostPort) => netAllowed(hostPort, scope.net)),
      ...socketsImports(net, allowed),
    },
    endCall: () => net.close(),
  };
}
