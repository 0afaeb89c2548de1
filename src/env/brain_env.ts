import { readList, readOptions } from "../outcome/known_keys.ts";
import type { BrainEnvGrant } from "../contract/grant.ts";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import { deepFreeze } from "../util/freeze.ts";
import { environmentOptions } from "./host_env.ts";
import type { Environment, EnvironmentOptions } from "../contract/placement.ts";

/** An Environment that Brain runs itself (Components in sandbox processes) with exactly its grant. */
export interface BrainEnvironment extends Environment {
  /** Always `brain`. */
  readonly kind: "brain";
  /** The requested authority, frozen. */
  readonly grant: Readonly<BrainEnvGrant>;
}

const BRAIN_ENV_OPTIONS = ["name", "control", "setup", "filesystem", "net", "env", "run"];

/**
 * Declares a Brain-hosted Environment binding. Its grant is checked against the
 * Brain's allow-list when a session is created; a denied grant fails there.
 * Every Tool placed with one binding receives that binding's authority,
 * including its `control` of `ctx.environments`.
 *
 * @example
 * ```ts
 * import { brainEnv } from "@aexhq/brain";
 * const reader = brainEnv({ name: "reader", filesystem: { workspace: "read" } });
 * console.log(reader.grant.filesystem?.workspace); // "read"
 * ```
 */
export function brainEnv(options: EnvironmentOptions & BrainEnvGrant): BrainEnvironment {
  const read = readOptions("brainEnv options", options, BRAIN_ENV_OPTIONS);
  const { name, control, setup } = environmentOptions(read);
  if (read.run !== undefined) {
    throw new BrainError("invalid_argument", `environment ${name}: a Brain-hosted Environment starts no programs`);
  }
  const grant: BrainEnvGrant = {};
  if (read.filesystem !== undefined) {
    const { workspace } = readOptions(`environment ${name}: filesystem`, read.filesystem, ["workspace"]);
    if (workspace !== "read" && workspace !== "write") {
      throw new BrainError("invalid_argument", `environment ${name}: filesystem.workspace must be "read" or "write"`);
    }
    grant.filesystem = { workspace };
  }
  for (const key of ["net", "env"] as const) {
    if (read[key] === undefined) continue;
    const list = readList(`environment ${name}: ${key}`, read[key]);
    if (list.some((entry) => typeof entry !== "string" || !entry)) {
      throw new BrainError("invalid_argument", `environment ${name}: ${key} must be a list of non-empty strings`);
    }
    grant[key] = list as string[];
  }
  const frozen = deepFreeze(grant);
  return Object.freeze({
    name,
    kind: "brain" as const,
    grant: frozen,
    control,
    setup,
    describe: (): JsonValue => ({ kind: "brain", name, grant: frozen as JsonValue, control: [...control] }),
  });
}

/** True when `env` is a {@linkcode BrainEnvironment}. */
export function isBrainEnv(env: Environment | undefined): env is BrainEnvironment {
  try {
    return env?.kind === "brain" && "grant" in env;
  } catch {
    return false;
  }
}
