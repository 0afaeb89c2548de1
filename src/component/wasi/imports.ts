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

/** A guest's WASI: the import objects, and what ends a call's use of them. */
export interface WasiHost {
  /** The import object entries for every interface in `WASI_INTERFACES` (./interfaces.ts). */
  imports: Record<string, unknown>;
  /** Closes the requests and connections a call left open. */
  endCall(): void;
}

/** The WASI a sandbox gives its guests, scoped to `scope`. */
export function wasiHost(scope: WasiScope): WasiHost {
  const filesystem = workspaceFilesystem(scope.workspace, scope.write);
  const net = new BlockingNet();
  const sockets = socketsImports(
    net,
    (host, port) =>
      port === undefined
        ? scope.net.some((entry) => entry === host || entry.replace(/:\d+$/, "") === host)
        : netAllowed(`${host}:${port}`, scope.net),
  );
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
      ...sockets.imports,
    },
    endCall: () => {
      net.close();
      sockets.endCall();
    },
  };
}
