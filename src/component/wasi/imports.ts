import { workspaceFilesystem } from "./filesystem.ts";

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
export const WASI_INTERFACES: readonly string[] = ["wasi:filesystem/types", "wasi:filesystem/preopens"];

/** The import object entries for every interface in {@linkcode WASI_INTERFACES}, scoped to `scope`. */
export function wasiImports(scope: WasiScope): Record<string, unknown> {
  const filesystem = workspaceFilesystem(scope.workspace);
  return { "wasi:filesystem/types": filesystem.types, "wasi:filesystem/preopens": filesystem.preopens };
}
