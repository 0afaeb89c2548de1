import { readRecord } from "../outcome/known_keys.ts";
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
  const read = readRecord("brainEnv options", options);
  const { name: _name, control: _control, setup: _setup, ...grant } = read;
  const { name, control, setup } = environmentOptions(read);
  const mode = grant.filesystem?.workspace;
  if (grant.filesystem && mode !== "read" && mode !== "write") {
    throw new BrainError("invalid_argument", `environment ${name}: filesystem.workspace must be "read" or "write"`);
  }
  for (const key of ["net", "env"] as const) {
    const list = grant[key];
    if (list !== undefined && (!Array.isArray(list) || list.some((entry) => typeof entry !== "string" || !entry))) {
      throw new BrainError("invalid_argument", `environment ${name}: ${key} must be a list of non-empty strings`);
    }
  }
  if (grant.run !== undefined) {
    throw new BrainError("invalid_argument", `environment ${name}: a Brain-hosted Environment starts no programs`);
  }
  const frozen = deepFreeze(structuredClone(grant));
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
