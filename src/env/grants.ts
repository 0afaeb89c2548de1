import type { AllowList } from "../contract/grant.ts";
import { BrainError } from "../outcome/errors.ts";
import { readRecord } from "../outcome/known_keys.ts";
import type { BrainEnvGrant } from "../contract/grant.ts";

/** Throws `permission_denied` naming the first part of `env`'s grant outside `allow`. */
export function checkGrant(env: { name: string; grant?: Readonly<BrainEnvGrant> }, allow: AllowList = {}): void {
  const { name, grant: given } = readRecord("checkGrant's environment", env);
  const grant: Readonly<BrainEnvGrant> = given === undefined ? {} : readRecord("a grant", given);
  const deny = (what: string) => {
    throw new BrainError("permission_denied", `environment ${name}: ${what} is outside this Brain's allow-list`, {
      details: { environment: name, denied: what },
    });
  };
  const mode = grant.filesystem?.workspace;
  if (mode && (!allow.workspaceRoot || !allow.filesystem?.includes(mode))) deny(`filesystem workspace "${mode}"`);
  for (const host of grant.net ?? []) if (!netAllowed(host, allow.net)) deny(`net "${host}"`);
  for (const name of grant.env ?? []) if (!allow.env?.includes(name)) deny(`env "${name}"`);
  for (const program of grant.run ?? []) if (!allow.run?.includes(program)) deny(`run "${program}"`);
}

/** True when `host` (`name` or `name:port`) is in `allowed`, or its bare name is. */
export function netAllowed(host: string, allowed: readonly string[] | undefined): boolean {
  if (!allowed) return false;
  if (allowed.includes(host)) return true;
  const bare = host.replace(/:\d+$/, "");
  return bare !== host && allowed.includes(bare);
}

/** The Deno permissions that are exactly `grant`, with `workspace` as the only path. */
export function grantPermissions(grant: BrainEnvGrant, workspace: string | undefined): Deno.PermissionOptionsObject {
  const mode = readRecord("a grant", grant).filesystem?.workspace;
  return {
    read: mode && workspace ? [workspace] : false,
    write: mode === "write" && workspace ? [workspace] : false,
    net: grant.net?.length ? [...grant.net] : false,
    env: grant.env?.length ? [...grant.env] : false,
    run: false,
    ffi: false,
    sys: false,
    import: false,
  };
}
