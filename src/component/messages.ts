/** What Brain's thread sends a Component Worker: everything one invocation needs. */
export type ToWorker = Invocation | { probe: true; permissions: Deno.PermissionOptionsObject };

/** One invocation for a Component Worker. */
export interface Invocation {
  /** The transpiled glue module's source. */
  glue: string;
  /** Compiled core modules by the glue's file names. */
  modules: Record<string, WebAssembly.Module>;
  /** The invocation record of `brain:tool/tool.run`. */
  invocation: { tool: string; input: string; options: string; deadlineAtMs: number };
  /** The preopened workspace, when the grant has one. */
  workspace: string | undefined;
  /** The permissions the Worker must have, exactly. */
  permissions: Deno.PermissionOptionsObject;
  /** The blocking reply channel for host calls. */
  channel: SharedArrayBuffer;
}

/** What a Component Worker reports. */
export type FromWorker =
  | { type: "call"; op: "emit" | "emit-result" | "returned" | "finish" | "model"; args: (string | undefined)[] }
  | { type: "telemetry"; level: string; message: string }
  | { type: "unsupported"; message: string }
  | { type: "ready" }
  | { type: "done"; error?: string };
