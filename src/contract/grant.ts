import type { JsonValue } from "../outcome/json.ts";

/** An immutable JSON description of a Tool that its Environment interprets (e.g. `http_json`). */
export type Descriptor = { readonly type: string } & { readonly [key: string]: JsonValue };

/** The authority a Brain-hosted Environment requests. Nothing is granted that is not named. */
export interface BrainEnvGrant {
  /** A per-session workspace directory, readable (`read`) or also writable (`write`). */
  filesystem?: { workspace: "read" | "write" };
  /** Host names (optionally `host:port`) the Environment may connect to. */
  net?: string[];
  /** Environment variable names the Environment may read. */
  env?: string[];
  /** Programs the Environment may start (an MCP server's command); a Brain-hosted Environment starts none. */
  run?: string[];
}

/**
 * What a Brain may grant to its Environments. Anything not listed is denied, so
 * a Brain without an allow-list grants no filesystem, network or variables.
 */
export interface AllowList {
  /** Directory under which each session's workspaces are created; filesystem grants need it. */
  workspaceRoot?: string;
  /** Workspace modes that may be granted. */
  filesystem?: ("read" | "write")[];
  /** Hosts (or `host:port`) that may be granted; a bare host allows every port of it. */
  net?: string[];
  /** Environment variable names that may be granted. */
  env?: string[];
  /** Programs (as given to the Environment, such as an MCP server's command) that may be started. */
  run?: string[];
}

/** One operation of `ctx.environments`; a binding's `control` lists the ones its Tools may use. */
export type EnvironmentOperation = "list" | "get" | "create" | "update" | "setup" | "delete" | "call";

/** Every {@linkcode EnvironmentOperation}. */
export const ENVIRONMENT_OPERATIONS: readonly EnvironmentOperation[] = Object.freeze([
  "list",
  "get",
  "create",
  "update",
  "setup",
  "delete",
  "call",
]);
