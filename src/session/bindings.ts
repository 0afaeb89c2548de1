import { BrainError } from "../outcome/errors.ts";
import { isInstance } from "../outcome/known_keys.ts";
import { errorText } from "../util/error_text.ts";
import type { Admission, PlacedTool } from "../contract/placement.ts";
import { checkGrant } from "../env/grants.ts";
import type { AllowList } from "../contract/grant.ts";
import type { Environment } from "../contract/placement.ts";
import { checkName } from "../util/names.ts";
import { makeWorkspace } from "./workspaces.ts";

/**
 * Admits a session's Environment bindings: one binding per name, each grant
 * inside the allow-list. Creates each filesystem grant's workspace under
 * `allow.workspaceRoot/<session>/<binding>` and returns the real paths by binding name.
 */
export async function bindEnvironments(
  sessionId: string,
  tools: readonly PlacedTool[],
  allow: AllowList | undefined,
): Promise<Map<string, string>> {
  const workspaces = new Map<string, string>();
  for (const env of uniqueBindings(tools).values()) {
    const workspace = await admitEnvironment(sessionId, env, allow);
    if (workspace) workspaces.set(env.name, workspace);
  }
  return workspaces;
}

/** The placements' Environments by name; one name bound twice with different authority is refused. */
export function uniqueBindings(tools: readonly PlacedTool[]): Map<string, Environment> {
  const bindings = new Map<string, Environment>();
  for (const { env, tool } of tools) {
    if (!env) continue;
    checkName(`tool ${tool.name}: an Environment name`, env.name);
    const bound = bindings.get(env.name);
    if (bound && bound !== env && description(bound) !== description(env)) {
      throw new BrainError(
        "invalid_argument",
        `tool ${tool.name}: environment ${env.name} is bound twice with different authority; use separate names`,
      );
    }
    if (!bound) bindings.set(env.name, env);
  }
  return bindings;
}

/** The JSON text of `env`'s description; `invalid_argument` when it cannot be had. */
function description(env: Environment): string | undefined {
  try {
    return JSON.stringify(env.describe());
  } catch (error) {
    throw new BrainError("invalid_argument", `environment ${env.name} cannot describe itself: ${errorText(error)}`);
  }
}

/**
 * Checks one binding's grant against `allow` (`permission_denied` outside it) and
 * creates its session workspace when the grant has one; returns the workspace's real path.
 */
export async function admitEnvironment(
  sessionId: string,
  env: Environment,
  allow: AllowList | undefined,
): Promise<string | undefined> {
  let filesystem: unknown;
  try {
    if (!env.grant) return undefined;
    checkGrant(env, allow);
    filesystem = env.grant.filesystem;
  } catch (error) {
    if (isInstance(error, BrainError)) throw error;
    throw new BrainError("invalid_argument", `an Environment's grant cannot be read: ${errorText(error)}`);
  }
  if (!filesystem) return undefined;
  return await makeWorkspace(allow!.workspaceRoot!, sessionId, env.name);
}

/** True when `env` grants filesystem, network or environment-variable access. */
function grantsAuthority(env: Environment): boolean {
  const grant = env.grant;
  return grant !== undefined &&
    (grant.filesystem !== undefined || (grant.net?.length ?? 0) > 0 || (grant.env?.length ?? 0) > 0);
}

/**
 * Admits one placed Tool's implementation, if it has one. A refusal that is not a
 * BrainError (a custom implementation's bug) becomes `invalid_tool` naming the Tool.
 * A `run` function runs in the application: in a binding that does not dispatch it
 * elsewhere yet grants authority (a `brainEnv` with a workspace, net or env grant it
 * would run outside of) or interprets descriptors (an `httpEnv`), it is `unsupported_runtime`.
 */
export async function admitImplementation(placed: PlacedTool, admission: Admission): Promise<void> {
  const { env, implementation, tool } = placed;
  if (!implementation && env && !env.dispatch && (grantsAuthority(env) || env.interpret)) {
    throw new BrainError(
      "unsupported_runtime",
      `tool ${tool.name}: a run function runs in the application, outside environment ${env.name} (${env.kind}), ` +
        `which ${env.interpret ? "runs descriptors" : "grants authority only a Component can be confined to"}; ` +
        `place it in a hostEnv`,
      { details: { tool: tool.name, environment: env.name, kind: env.kind } },
    );
  }
  try {
    await placed.implementation?.admit(admission);
  } catch (error) {
    if (isInstance(error, BrainError)) throw error;
    throw new BrainError(
      "invalid_tool",
      `tool ${placed.tool.name}: its implementation refused admission: ${errorText(error)}`,
      { cause: error },
    );
  }
}
