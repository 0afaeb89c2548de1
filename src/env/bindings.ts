import { BrainError } from "../outcome/errors.ts";
import type { PlacedTool } from "../tool/tool.ts";
import { type AllowList, checkGrant } from "./allow_list.ts";
import { isBrainEnv } from "./brain_env.ts";
import type { Environment } from "./environment.ts";

/**
 * Admits a session's Environment bindings: one binding per name, each Brain
 * grant inside the allow-list. Creates each filesystem grant's workspace under
 * `allow.workspaceRoot/<session>/<binding>` and returns the real paths by binding name.
 */
export async function bindEnvironments(
  sessionId: string,
  tools: readonly PlacedTool[],
  allow: AllowList | undefined,
): Promise<Map<string, string>> {
  const bindings = new Map<string, Environment>();
  for (const { env, tool } of tools) {
    if (!env) continue;
    const bound = bindings.get(env.name);
    if (bound && bound !== env && JSON.stringify(bound.describe()) !== JSON.stringify(env.describe())) {
      throw new BrainError(
        "invalid_argument",
        `tool ${tool.name}: environment ${env.name} is bound twice with different authority; use separate names`,
      );
    }
    bindings.set(env.name, env);
  }
  const workspaces = new Map<string, string>();
  for (const env of bindings.values()) {
    if (!isBrainEnv(env)) continue;
    checkGrant(env, allow);
    if (!env.grant.filesystem) continue;
    const path = `${allow!.workspaceRoot}/${sessionId}/${env.name}`;
    await Deno.mkdir(path, { recursive: true });
    workspaces.set(env.name, await Deno.realPath(path));
  }
  return workspaces;
}
