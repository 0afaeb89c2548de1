import type { JsonValue } from "../outcome/json.ts";
import type { Descriptor, Dispatch } from "../tool/implementation.ts";

/**
 * Where a placed Tool runs and with what authority. Brain treats an Environment
 * as a named binding; built-ins are {@linkcode hostEnv} and the ones the
 * environment modules add.
 */
export interface Environment {
  /** Binding name, unique among a session's Environments. */
  readonly name: string;
  /** Which runtime interprets the binding, such as `host`. */
  readonly kind: string;
  /** The binding's JSON description, as the session journal records it. */
  describe(): JsonValue;
  /** Runs one call of a descriptor Tool; Environments without it cannot host descriptors. */
  interpret?(descriptor: Descriptor, dispatch: Dispatch): void;
}

/**
 * The application's own process as a named Environment: Tools run as functions
 * with the process's own permissions and working directory.
 *
 * @example
 * ```ts
 * import { hostEnv } from "@aexhq/brain";
 * const app = hostEnv({ name: "app" });
 * console.log(app.kind); // "host"
 * ```
 */
export function hostEnv({ name }: { name: string }): Environment {
  return Object.freeze({
    name,
    kind: "host",
    describe: () => ({ kind: "host", name }),
  });
}
