import { type BrainEnvironment, isBrainEnv } from "../env/brain_env.ts";
import type { Environment } from "../contract/placement.ts";
import { grantPermissions } from "../env/grants.ts";

const NONE: Deno.PermissionOptionsObject = {
  read: false,
  write: false,
  net: false,
  env: false,
  run: false,
  ffi: false,
  sys: false,
  import: false,
};

/**
 * The Deno permissions of a Component sandbox: exactly its Brain Environment's
 * grant, with the session workspace as the only path, plus reading the
 * Component's own cache entry (`code`); nothing else without an Environment.
 */
export function componentPermissions(
  env: Environment | undefined,
  workspace: string | undefined,
  code?: string,
): Deno.PermissionOptionsObject {
  const granted = isBrainEnv(env) ? grantPermissions((env as BrainEnvironment).grant, workspace) : { ...NONE };
  if (code === undefined) return granted;
  return { ...granted, read: [code, ...(Array.isArray(granted.read) ? granted.read : [])] };
}

/** The `deno run` permission flags that give a process exactly `permissions` (everything unnamed is denied). */
export function permissionFlags(permissions: Deno.PermissionOptionsObject): string[] {
  const flags: string[] = [];
  for (const name of ["read", "write", "net", "env"] as const) {
    const value = permissions[name];
    if (Array.isArray(value) && value.length > 0) flags.push(`--allow-${name}=${value.join(",")}`);
    else if (value === true) flags.push(`--allow-${name}`);
  }
  return flags;
}

const KEYS = { read: "path", write: "path", net: "host", env: "variable", run: "command", ffi: "path", sys: "kind" };

/**
 * Run inside a sandbox: says which part of `expected` the process's actual
 * permissions differ from, or undefined when they match. A sandbox holding
 * more than its grant fails here, before any guest code.
 */
export function permissionMismatch(expected: Deno.PermissionOptionsObject): string | undefined {
  for (const [name, key] of Object.entries(KEYS) as [keyof typeof KEYS, string][]) {
    const want = expected[name];
    const state = (extra: Record<string, string> = {}) =>
      Deno.permissions.querySync({ name, ...extra } as Deno.PermissionDescriptor).state;
    if (Array.isArray(want)) {
      for (const entry of want) {
        if (state({ [key]: String(entry) }) !== "granted") return `${name} ${entry} is not granted`;
      }
      if (state() === "granted") return `${name} is granted beyond ${want.join(", ")}`;
      if (name === "read" || name === "write") {
        // An inherited path grant (say --allow-read=.) also covers the workspace's parent.
        for (const path of ["/", ...want.map((entry) => `${entry}/..`)]) {
          if (state({ path }) === "granted") return `${name} of ${path} is granted`;
        }
      }
    } else if (want !== true && state() === "granted") return `${name} is granted`;
  }
  return undefined;
}
