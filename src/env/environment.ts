import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { Descriptor, Dispatch } from "../tool/implementation.ts";
import type { PlacedTool } from "../tool/tool.ts";
import type { AllowList } from "./allow_list.ts";
import type { BrainEnvGrant } from "./brain_env.ts";

/** One operation of `ctx.environments`; a binding's `control` lists the ones its Tools may use. */
export type EnvironmentOperation = "list" | "get" | "create" | "update" | "setup" | "delete" | "call";

/** Every {@linkcode EnvironmentOperation}. */
export const ENVIRONMENT_OPERATIONS: readonly EnvironmentOperation[] = Object.freeze([
  "list",
  "get",
  "create",
  "update",
  "setup",
  "delete",
  "call",
]);

/** What an Environment's setup script receives. */
export interface SetupContext {
  /** The binding name. */
  name: string;
  /** Real path of the binding's session workspace, when its grant has one. */
  workspace: string | undefined;
  /** Aborted when the call that triggered setup ends first. */
  signal: AbortSignal;
}

/**
 * Prepares an Environment (installs dependencies, warms caches) before the first
 * Tool of a session uses it. It belongs to the Environment: Brain installs nothing itself.
 */
export type SetupScript = (context: SetupContext) => Promise<void> | void;

/** Options every built-in Environment takes. */
export interface EnvironmentOptions {
  /** Binding name, unique among a session's Environments; `[A-Za-z0-9_.-]+`. */
  name: string;
  /**
   * The `ctx.environments` operations Tools placed in this binding may use.
   * Nothing is granted by default; every Tool in the binding gets the same list.
   */
  control?: readonly EnvironmentOperation[];
  /**
   * Runs once per session before the binding's first call, and again only on an
   * explicit `ctx.environments.setup(name)`. A failure ends each call that needs
   * it with an `error` outcome coded `setup_failed`; nothing retries it automatically.
   */
  setup?: SetupScript;
}

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
  /** Authority the binding asks of the Brain; checked against its allow-list when a session is created. */
  readonly grant?: Readonly<BrainEnvGrant>;
  /** The `ctx.environments` operations its Tools may use. */
  readonly control?: readonly EnvironmentOperation[];
  /** Its setup script, if any. */
  readonly setup?: SetupScript;
  /** True when its Tools may call the session's model through the model execution service. */
  readonly model?: boolean;
  /** Runs one call of a descriptor Tool; Environments without it cannot host descriptors. */
  interpret?(descriptor: Descriptor, dispatch: Dispatch): void;
  /** Throws a BrainError when `descriptor` is malformed for this Environment; called at placement. */
  checkDescriptor?(descriptor: Descriptor, toolName: string): void;
  /** Runs `descriptor` once on `input` for `ctx.environments.call`, resolving with its JSON result. */
  invoke?(descriptor: Descriptor, input: JsonValue, signal: AbortSignal): Promise<JsonValue>;
  /** Runs a host Tool placed in this binding somewhere else (an Application tool extension). */
  dispatch?(dispatch: Dispatch): void;
  /**
   * Places Tools of its own in one session (an MCP server's tools). Brain calls it
   * after checking the grant, when a session given this Environment is created or
   * reopened, and calls the returned `close` when that session handle ends.
   */
  place?(admission: EnvironmentAdmission): Promise<EnvironmentTools>;
}

/** What an Environment that places its own Tools is given for one session. */
export interface EnvironmentAdmission {
  /** The session being created or reopened. */
  sessionId: string;
  /** Real path of the binding's session workspace, when its grant has one. */
  workspace: string | undefined;
  /** What the Brain may grant. */
  allow: AllowList | undefined;
}

/** The Tools an Environment placed in one session, and how to release what it opened for them. */
export interface EnvironmentTools {
  /** The placed Tools, each naming this Environment. */
  tools: readonly PlacedTool[];
  /** Releases the session's resources (connections, processes); Brain awaits it when the session handle ends. */
  close(): Promise<void>;
}

/** Validates the options every Environment shares and returns them frozen. */
export function environmentOptions(
  { name, control, setup }: EnvironmentOptions,
): { name: string; control: readonly EnvironmentOperation[]; setup: SetupScript | undefined } {
  if (typeof name !== "string" || !/^[A-Za-z0-9_.-]+$/.test(name)) {
    throw new BrainError(
      "invalid_argument",
      `an Environment name must match [A-Za-z0-9_.-]+, got ${JSON.stringify(name)}`,
    );
  }
  if (
    control !== undefined && (!Array.isArray(control) || control.some((op) => !ENVIRONMENT_OPERATIONS.includes(op)))
  ) {
    throw new BrainError(
      "invalid_argument",
      `environment ${name}: control must list operations among ${ENVIRONMENT_OPERATIONS.join(", ")}`,
    );
  }
  if (setup !== undefined && typeof setup !== "function") {
    throw new BrainError("invalid_argument", `environment ${name}: setup must be a function`);
  }
  return { name, control: Object.freeze([...new Set(control ?? [])]), setup };
}

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
  const { name, control, setup } = environmentOptions(options);
  return Object.freeze({
    name,
    kind: "host",
    control,
    setup,
    describe: () => ({ kind: "host", name, control: [...control] }),
  });
}
