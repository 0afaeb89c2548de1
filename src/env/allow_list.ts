import type { AllowList } from "../contract/grant.ts";
import { BrainError } from "../outcome/errors.ts";
import { allKeys, readOptions } from "../outcome/known_keys.ts";
import { isGrantablePath } from "../util/grantable_path.ts";

const ALLOW_KEYS = allKeys<AllowList>({ workspaceRoot: true, filesystem: true, net: true, env: true, run: true });
const LISTS = ["filesystem", "net", "env", "run"] as const;

/**
 * A Brain's allow-list read once into a frozen copy: `workspaceRoot` a non-empty
 * path, every other entry an array of non-empty strings (`filesystem` of `read`
 * and `write`). Throws `invalid_argument`, so a malformed list fails where it is
 * given, not in a later grant check.
 *
 * @example
 * ```ts
 * import { checkAllowList } from "./allow_list.ts";
 * console.log(checkAllowList({ net: ["127.0.0.1"] })?.net); // ["127.0.0.1"]
 * ```
 */
export function checkAllowList(allow: AllowList | undefined): Readonly<AllowList> | undefined {
  if (allow === undefined) return undefined;
  const read = readOptions("allow", allow, ALLOW_KEYS);
  const root = read.workspaceRoot;
  if (root !== undefined && !isGrantablePath(root)) {
    throw new BrainError(
      "invalid_argument",
      "allow.workspaceRoot must be a non-empty path without NUL or commas (sandboxes are granted its workspaces)",
    );
  }
  for (const name of LISTS) {
    const list = read[name];
    if (list === undefined) continue;
    const copy = strings(list);
    if (!copy || (name === "filesystem" && copy.some((mode) => mode !== "read" && mode !== "write"))) {
      throw new BrainError(
        "invalid_argument",
        `allow.${name} must be an array of ${name === "filesystem" ? '"read" and "write"' : "non-empty strings"}`,
      );
    }
    (read as Record<string, unknown>)[name] = Object.freeze(copy);
  }
  return Object.freeze(read);
}

function strings(list: unknown): string[] | undefined {
  try {
    if (!Array.isArray(list)) return undefined;
    const copy = [...list];
    return copy.every((entry) => typeof entry === "string" && entry !== "") ? copy : undefined;
  } catch {
    return undefined;
  }
}
