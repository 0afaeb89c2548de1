/**
 * The interface for people who write their own Environment or Tool implementation:
 * what Brain hands an executor for each dispatched call (`Dispatch`, `CallSink`,
 * `Invocation`), what it admits at session creation (`Implementation`, `Admission`),
 * and the grant checks Brain itself applies.
 *
 * @example
 * ```ts
 * import type { Environment } from "@aexhq/brain";
 * import type { Descriptor, Dispatch } from "@aexhq/brain/environment";
 *
 * // An Environment that interprets `{ type: "echo" }` descriptors by finishing with the input.
 * const echoEnv: Environment = {
 *   name: "echo",
 *   kind: "echo",
 *   describe: () => ({ kind: "echo", name: "echo" }),
 *   interpret(_descriptor: Descriptor, dispatch: Dispatch) {
 *     void dispatch.sink.finish({ outcome: { status: "ok", value: dispatch.invocation.input } });
 *   },
 * };
 * console.log(echoEnv.kind); // "echo"
 * ```
 *
 * @module
 */
export type { CallSink, Invocation, PublishedResult } from "../contract/call.ts";
export type { Admission, Dispatch, Implementation, ModelAccess } from "../contract/placement.ts";
export { MODEL_TOKEN_HEADER, MODEL_URL_HEADER } from "../contract/placement.ts";
export { type Descriptor, ENVIRONMENT_OPERATIONS } from "../contract/grant.ts";
export { checkGrant, grantPermissions, netAllowed } from "./grants.ts";
export { type BrainEnvironment, isBrainEnv } from "./brain_env.ts";
export { HTTP_JSON_METHODS, type HttpJsonDescriptor, type HttpJsonMethod } from "./http_json.ts";
export { type FactoryImplementation, factoryImplementation } from "../tool/tool.ts";
export type {
  BrainResources,
  ComponentSettings,
  Environment,
  EnvironmentAdmission,
  EnvironmentOptions,
  EnvironmentTools,
  PlacedTool,
  Schema,
  SetupContext,
  SetupScript,
  ToolDeclaration,
} from "../contract/placement.ts";
export type { AllowList, BrainEnvGrant, EnvironmentOperation } from "../contract/grant.ts";
export type { EnvironmentControl, EnvironmentInfo, EnvironmentSpec } from "../contract/control.ts";
export type { Finished, ResultOptions, ToolContext } from "../contract/context.ts";
export type { JsonValue } from "../outcome/json.ts";
export type { Outcome, OutcomeError, OutcomeStatus } from "../outcome/outcome.ts";
export type * from "../journal/records.ts";
export type * from "../model/types.ts";
export type { AcquireOptions, AppendOptions, Lease } from "../journal/lease.ts";
