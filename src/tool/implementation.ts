import type { AllowList } from "../env/allow_list.ts";
import type { Environment } from "../env/environment.ts";
import type { ModelAccess } from "../env/model_service.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { CallSink, Invocation } from "./invocation.ts";
import type { ToolDeclaration } from "./tool.ts";

/** An immutable JSON description of a Tool that its Environment interprets (e.g. `http_json`). */
export type Descriptor = { readonly type: string } & { readonly [key: string]: JsonValue };

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
