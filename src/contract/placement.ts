import type { ZodType } from "zod";
import type { AdvertisedTool } from "../journal/records.ts";
import type { ToolContext } from "./context.ts";
import type { AllowList, BrainEnvGrant, Descriptor, EnvironmentOperation } from "./grant.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { CallSink, Invocation } from "./call.ts";

/** Everything an executor needs to run one dispatched call of a placed Tool. */
export interface Dispatch {
  /** The call as Brain committed it. */
  invocation: Invocation;
  /** The placed Tool's declaration: its schemas, and `run` for host Tools. */
  tool: ToolDeclaration;
  /** The placement's parsed, frozen options. */
  options: Readonly<Record<string, unknown>>;
  /** The placement's Environment, when it names one. */
  env: Environment | undefined;
  /** Real path of the binding's session workspace, when its grant has one. */
  workspace: string | undefined;
  /** Where the executor reports events, results and the end of the call. */
  sink: CallSink;
  /** This call's access to the model execution service, when its binding grants `model`. */
  modelAccess?: ModelAccess;
  /** What the Brain lends its implementations (a Component's sandboxes live there). */
  resources?: BrainResources;
}

/** What an implementation is admitted with when a session is created or reopened. */
export interface Admission {
  /** The placement's Environment, when it names one. */
  env: Environment | undefined;
  /** The placement's parsed, frozen options. */
  options: Readonly<Record<string, unknown>>;
  /** Real path of the binding's session workspace, when its grant has one. */
  workspace: string | undefined;
  /** What the Brain may grant; network an implementation itself uses must be inside it. */
  allow: AllowList | undefined;
  /** What the Brain lends its implementations (a Component's sandboxes live there). */
  resources?: BrainResources;
  /** Aborted when the admitted session handle ends: what the implementation holds for it can go. */
  ended?: AbortSignal;
}

/**
 * Settings for the child processes that run Components (sandboxes), per Brain.
 * Every number must be a positive integer.
 */
export interface ComponentSettings {
  /**
   * Folder of the transpiled-Component cache, shared by processes (absolute, or
   * relative to the working directory); `.brain/components` by default.
   */
  cacheDir?: string;
  /** Largest guest memory and JavaScript heap of one sandbox, in MiB (default 256). */
  memoryMb?: number;
  /** Most sandbox processes alive at once in this Brain (default 8); more calls wait for one. */
  maxSandboxes?: number;
  /** Most calls waiting for a sandbox (default 1000); past it a call ends `resource_exhausted`. */
  maxQueuedCalls?: number;
  /** Ready sandboxes kept per Component and grant while a session places it (default 1). */
  warm?: number;
}

/** What a Brain lends the implementations it admits: state kept per Brain, released when the Brain closes. */
export interface BrainResources {
  /** This Brain's value under `key`, made by `create` on first use and disposed when the Brain closes. */
  keep<T extends AsyncDisposable>(key: object, create: (settings: Readonly<ComponentSettings>) => T): T;
}

/**
 * A Tool implementation other than an application function: a Component, an
 * Environment-interpreted descriptor, or a v1 HTTP endpoint. Brain admits it when a session is created
 * and hands it each dispatched call exactly once.
 */
export interface Implementation {
  /** `component`, `descriptor`, `http` (a v1 plain-JSON endpoint), or `host` (an application function over a host connection). */
  readonly kind: "component" | "descriptor" | "http" | "host";
  /** Checks and prepares the placement when a session is created; throws a BrainError to refuse it. */
  admit(placement: Admission): Promise<void>;
  /** Runs one call; everything it learns goes to `dispatch.sink`. */
  execute(dispatch: Dispatch): void;
}

/** Any zod schema. */
export type Schema = ZodType;

/** A declared Tool: its contract, with JSON Schemas exported at declaration. */
export interface ToolDeclaration {
  /** Tool name. */
  readonly name: string;
  /** Model-facing description. */
  readonly description: string;
  /** The zod input schema. */
  readonly input: Schema;
  /** The zod output schema, if any. */
  readonly output: Schema | undefined;
  /** JSON Schema of accepted input. */
  readonly inputSchema: Record<string, JsonValue>;
  /** JSON Schema of parsed output, if any. */
  readonly outputSchema: Record<string, JsonValue> | undefined;
  /** The application function, for host Tools. */
  readonly run: ((input: unknown, ctx: ToolContext<never, never>) => unknown) | undefined;
}

/** A Tool placed with its options and Environment, ready to be given to a session. */
export interface PlacedTool {
  /** The declaration it places. */
  readonly tool: ToolDeclaration;
  /** Parsed, deeply frozen factory options. */
  readonly options: Readonly<Record<string, unknown>>;
  /** The Environment named at placement, if any. */
  readonly env: Environment | undefined;
  /** The non-host implementation, if any. */
  readonly implementation: Implementation | undefined;
  /** The contract a session advertises and reattachment compares. */
  readonly advertised: AdvertisedTool;
}

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
  /** Binding name, unique among a session's Environments: letters, digits, `-`, `_`, `.`, no leading dot, at most 128. */
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

/** Request header carrying the model execution service's URL to an HTTP Environment. */
export const MODEL_URL_HEADER = "brain-model-url";

/** Request header carrying the per-call bearer token for the model execution service. */
export const MODEL_TOKEN_HEADER = "brain-model-token";

/** Where one granted call reaches the model execution service, and the token that names it. */
export interface ModelAccess {
  /** POST a `ModelRequest` JSON body here. */
  url: string;
  /** Send it as `authorization: Bearer <token>`; it is valid only while the call is open. */
  token: string;
}
