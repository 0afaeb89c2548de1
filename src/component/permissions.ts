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
