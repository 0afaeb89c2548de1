import type { AllowList } from "../contract/grant.ts";
import { BrainError } from "../outcome/errors.ts";
import { readList, readRecord } from "../outcome/known_keys.ts";
import type { BrainEnvGrant } from "../contract/grant.ts";
import { checkAllowList } from "./allow_list.ts";

/**
 * Throws `permission_denied` naming the first part of `env`'s grant outside
 * `allow`; `invalid_argument` for a grant or allow-list that is malformed or
 * cannot be read.
 */
export function checkGrant(env: { name: string; grant?: Readonly<BrainEnvGrant> }, allow: AllowList = {}): void {
  const { name, grant: given } = readRecord("checkGrant's environment", env);
  const grant = given === undefined ? {} : readGrant(given);
  const allowed = checkAllowList(allow) ?? {};
  const deny = (what: string) => {
    throw new BrainError("permission_denied", `environment ${name}: ${what} is outside this Brain's allow-list`, {
      details: { environment: name, denied: what },
    });
  };
  const mode = grant.filesystem?.workspace;
  if (mode && (!allowed.workspaceRoot || !allowed.filesystem?.includes(mode))) deny(`filesystem workspace "${mode}"`);
  for (const host of grant.net ?? []) if (!netAllowed(host, allowed.net)) deny(`net "${host}"`);
  for (const name of grant.env ?? []) if (!allowed.env?.includes(name)) deny(`env "${name}"`);
  for (const program of grant.run ?? []) if (!allowed.run?.includes(program)) deny(`run "${program}"`);
}

/**
 * True when `host` (`name` or `name:port`) is in `allowed`, or its bare name is;
 * false for anything else, a host or list that is no string or list of them included.
 */
export function netAllowed(host: string, allowed: readonly string[] | undefined): boolean {
  if (typeof host !== "string" || !allowed) return false;
  try {
    if (!Array.isArray(allowed)) return false;
    if (allowed.includes(host)) return true;
    const bare = host.replace(/:\d+$/, "");
    return bare !== host && allowed.includes(bare);
  } catch {
    // A Proxy whose items cannot be read allows nothing.
    return false;
  }
}

/** The Deno permissions that are exactly `grant`, with `workspace` as the only path. */
export function grantPermissions(grant: BrainEnvGrant, workspace: string | undefined): Deno.PermissionOptionsObject {
  const { filesystem, net, env } = readGrant(grant);
  const mode = filesystem?.workspace;
  if (workspace !== undefined && typeof workspace !== "string") {
    throw new BrainError("invalid_argument", "a workspace is a path, a string");
  }
  return {
    read: mode && workspace ? [workspace] : false,
    write: mode === "write" && workspace ? [workspace] : false,
    net: net?.length ? net : false,
    env: env?.length ? env : false,
    run: false,
    ffi: false,
    sys: false,
    import: false,
  };
}

/**
 * A grant read once into a plain copy: `filesystem.workspace` `read` or `write`,
 * `net`, `env` and `run` lists of non-empty strings. Anything else, or a getter
 * or Proxy that throws, is `invalid_argument`.
 */
/**
 * Deno's command-line flags for exactly `permissions` (lists, `true`, or false for none). Deno splits a flag's list
 * at every comma and has no escape for one, so an entry holding a comma would grant its pieces instead (a path's
 * prefix among them): such an entry is refused `unsupported_runtime`, never turned into a flag.
 */
export function permissionFlags(permissions: Deno.PermissionOptionsObject): string[] {
  const flags: string[] = [];
  for (const name of ["read", "write", "net", "env"] as const) {
    const value = permissions[name];
    if (Array.isArray(value) && value.length > 0) {
      const entries = value.map(String);
      const split = entries.find((entry) => entry.includes(","));
      if (split !== undefined) {
        throw new BrainError(
          "unsupported_runtime",
          `${name} access to ${JSON.stringify(split)} cannot be granted: Deno's --allow-${name} splits it at its comma`,
          { details: { permission: name, entry: split } },
        );
      }
      flags.push(`--allow-${name}=${entries.join(",")}`);
    } else if (value === true) flags.push(`--allow-${name}`);
  }
  return flags;
}

function readGrant(given: BrainEnvGrant): BrainEnvGrant {
  const read = readRecord("a grant", given);
  const grant: BrainEnvGrant = {};
  if (read.filesystem !== undefined) {
    const { workspace } = readRecord("a grant's filesystem", read.filesystem);
    if (workspace !== "read" && workspace !== "write") {
      throw new BrainError("invalid_argument", 'a grant\'s filesystem.workspace is "read" or "write"');
    }
    grant.filesystem = { workspace };
  }
  for (const key of ["net", "env", "run"] as const) {
    if (read[key] === undefined) continue;
    const list = readList(`a grant's ${key}`, read[key]);
    if (list.some((entry) => typeof entry !== "string" || entry === "")) {
      throw new BrainError("invalid_argument", `a grant's ${key} is a list of non-empty strings`);
    }
    grant[key] = list as string[];
  }
  return grant;
}
