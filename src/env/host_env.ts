import { allKeys, readList, readOptions, readRecord } from "../outcome/known_keys.ts";
import type { Environment, EnvironmentOptions, SetupScript } from "../contract/placement.ts";
import { ENVIRONMENT_OPERATIONS, type EnvironmentOperation } from "../contract/grant.ts";
import { BrainError } from "../outcome/errors.ts";
import { checkName } from "../util/names.ts";

/** Validates the options every Environment shares and returns them frozen. */
export function environmentOptions(
  options: EnvironmentOptions,
): { name: string; control: readonly EnvironmentOperation[]; setup: SetupScript | undefined } {
  const { name, control, setup } = readRecord("Environment options", options);
  checkName("an Environment name", name);
  const operations = control === undefined ? [] : readList(`environment ${name}: control`, control);
  if (operations.some((op) => !ENVIRONMENT_OPERATIONS.includes(op as EnvironmentOperation))) {
    throw new BrainError(
      "invalid_argument",
      `environment ${name}: control must list operations among ${ENVIRONMENT_OPERATIONS.join(", ")}`,
    );
  }
  if (setup !== undefined && typeof setup !== "function") {
    throw new BrainError("invalid_argument", `environment ${name}: setup must be a function`);
  }
  return { name, control: Object.freeze([...new Set(operations as EnvironmentOperation[])]), setup };
}

const HOST_ENV_OPTIONS = allKeys<EnvironmentOptions>({ name: true, control: true, setup: true });

/**
 * The application's own process as a named Environment: Tools run as functions
 * with the process's own permissions and working directory. `control` lets its
 * Tools use `ctx.environments`; `setup` runs before the binding's first call.
 *
 * @example
 * ```ts
 * import { hostEnv } from "@aexhq/brain";
 * const app = hostEnv({ name: "app", control: ["list", "get"] });
 * console.log(app.kind, app.control); // "host" ["list", "get"]
 * ```
 */
export function hostEnv(options: EnvironmentOptions): Environment {
  const { name, control, setup } = environmentOptions(readOptions("hostEnv options", options, HOST_ENV_OPTIONS));
  return Object.freeze({
    name,
    kind: "host",
    control,
    setup,
    describe: () => ({ kind: "host", name, control: [...control] }),
  });
}
