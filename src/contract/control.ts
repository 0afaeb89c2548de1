import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { BrainEnvGrant, Descriptor, EnvironmentOperation } from "./grant.ts";

/** One Environment as `ctx.environments` reports it. */
export interface EnvironmentInfo {
  /** Binding name. */
  name: string;
  /** Runtime kind, such as `host`, `brain` or `http`. */
  kind: string;
  /** The Environment's own JSON description. */
  description: JsonValue;
  /** True when a Tool created it with `ctx.environments.create`; only those may be updated or deleted. */
  created: boolean;
}

/**
 * A JSON description of an Environment a Tool may create: an HTTP base URL or a
 * Brain-hosted grant. Either is checked against the Brain's allow-list; created
 * Environments carry no control and no setup script.
 */
export type EnvironmentSpec =
  | { kind: "http"; name: string; baseUrl: string; headers?: Record<string, string> }
  | ({ kind: "brain"; name: string } & BrainEnvGrant);

/**
 * `ctx.environments`: the session's Environments, for a Tool whose binding's
 * `control` lists the operation. Every other operation rejects with `permission_denied`.
 */
export interface EnvironmentControl {
  /** Every Environment of the session. */
  list(): Promise<EnvironmentInfo[]>;
  /** One Environment; `environment_not_found` when there is none. */
  get(name: string): Promise<EnvironmentInfo>;
  /** Creates an Environment inside the allow-list; `environment_exists` when the name is taken. */
  create(spec: EnvironmentSpec): Promise<EnvironmentInfo>;
  /** Replaces a created Environment; placement bindings are immutable (`permission_denied`). */
  update(name: string, spec: EnvironmentSpec): Promise<EnvironmentInfo>;
  /** Runs an Environment's setup script again, explicitly; rejects with `setup_failed`. */
  setup(name: string): Promise<void>;
  /** Deletes a created Environment and its workspace. */
  delete(name: string): Promise<void>;
  /** Runs `descriptor` once on `input` in the named Environment and resolves with its JSON result. */
  call(name: string, descriptor: Descriptor, input: JsonValue): Promise<JsonValue>;
}

/** A control whose every operation is refused with `permission_denied`, giving `reason`. */
export function refusedControl(reason: string): EnvironmentControl {
  const refuse = (operation: EnvironmentOperation) => () =>
    Promise.reject(
      new BrainError("permission_denied", `ctx.environments.${operation} is not granted: ${reason}`, {
        details: { operation },
      }),
    );
  return Object.freeze({
    list: refuse("list"),
    get: refuse("get"),
    create: refuse("create"),
    update: refuse("update"),
    setup: refuse("setup"),
    delete: refuse("delete"),
    call: refuse("call"),
  });
}
