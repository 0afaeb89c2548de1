/**
 * Brain: durable agent sessions and the Tools they call. Declare Tools with
 * {@linkcode tool}, place them in a session of a {@linkcode Brain}, and every
 * call, event, result and finish is journaled in order before anyone sees it.
 *
 * @example
 * ```ts
 * import { Brain, tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const greet = tool({
 *   name: "greet",
 *   description: "Greet someone.",
 *   input: z.object({ name: z.string() }),
 *   run: async ({ name }, ctx) => {
 *     await ctx.emit("greeting", { name });
 *     return ctx.finish(`hello ${name}`);
 *   },
 * });
 *
 * const brain = new Brain();
 * try {
 *   const session = await brain.sessions.create({ tools: [greet()] });
 *   console.log((await session.call("greet", { name: "Ada" })).outcome);
 * } finally {
 *   await brain.close();
 * }
 * ```
 *
 * @module
 */
export { BrainError, type BrainErrorCode } from "./src/outcome/errors.ts";
export type { JsonValue } from "./src/outcome/json.ts";
export { fail, isFailure, ok, type Outcome, type OutcomeError, type OutcomeStatus } from "./src/outcome/outcome.ts";
export { MAX_JSON_DEPTH } from "./src/outcome/json.ts";
export { MAX_NAME_LENGTH } from "./src/util/names.ts";
export {
  BRAIN_MAX_CANCEL_REASON,
  BRAIN_MAX_INPUT_BYTES,
  BRAIN_MAX_LATE_RECORDS,
  BRAIN_TELEMETRY_LIMITS,
} from "./src/contract/budgets.ts";
export type { Journal, ReadOptions, SubscribeOptions } from "./src/journal/journal.ts";
export type * from "./src/journal/records.ts";
export type { AcquireOptions, AppendOptions, Lease, StoredLease } from "./src/journal/lease.ts";
export type { NodeBeat } from "./src/journal/nodes.ts";
export type { SessionCreateOptions } from "./src/journal/host_sessions.ts";
export { formatRecord } from "./src/journal/format.ts";
export type { CallSink, Invocation, PublishedResult } from "./src/contract/call.ts";
export type {
  Admission,
  BrainResources,
  ComponentSettings,
  Dispatch,
  Environment,
  EnvironmentAdmission,
  EnvironmentOptions,
  EnvironmentTools,
  Implementation,
  ModelAccess,
  PlacedTool,
  Schema,
  SetupContext,
  SetupScript,
  ToolDeclaration,
} from "./src/contract/placement.ts";
export type { AllowList, BrainEnvGrant, Descriptor, EnvironmentOperation } from "./src/contract/grant.ts";
export type { EnvironmentControl, EnvironmentInfo, EnvironmentSpec } from "./src/contract/control.ts";
export type { Finished, ResultOptions, ToolContext } from "./src/contract/context.ts";
export { hostEnv } from "./src/env/host_env.ts";
export { httpEnv, type HttpEnvOptions } from "./src/env/http_env.ts";
export type { HttpJsonDescriptor, HttpJsonMethod } from "./src/env/http_json.ts";
export { brainEnv, type BrainEnvironment } from "./src/env/brain_env.ts";
export { http, type HttpOptions, httpTool } from "./src/http/http_tool.ts";
export {
  type OutputOf,
  type ParsedOptions,
  type Placement,
  type PlacementArguments,
  type RunFunction,
  tool,
  type ToolFactory,
  type ToolSpec,
} from "./src/tool/tool.ts";
export { type Activation, BRAIN_MAX_EMITTED_BYTES, BRAIN_MAX_MODEL_CALLS } from "./src/session/activation.ts";
export type { CallEnd } from "./src/session/call_state.ts";
export type { BrainSession, ToolCall } from "./src/session/handle.ts";
export type { CallOptions } from "./src/session/call_arguments.ts";
export type { AssistantMessage, SendOptions } from "./src/session/conversation.ts";
export {
  Brain,
  type BrainOptions,
  type CreateSessionOptions,
  type GetSessionOptions,
  type RemoteBrainOptions,
  type Sessions,
} from "./src/brain/brain.ts";
export type * from "./src/model/types.ts";
export { openAICompatible, type OpenAICompatibleOptions } from "./src/model/openai.ts";
export { WAKE_BATCH_MS } from "./src/agentloop/wake.ts";
export { AGENTLOOP_TOOL_DEADLINE_MS, type AgentloopOptions } from "./src/agentloop/agentloop.ts";
export type { HostCredentials } from "./src/embedded/host_token.ts";
export type { Viewer, ViewerOptions } from "./src/viewer/viewer.ts";
export type { HostConnectionEvent } from "./src/host/client/connection.ts";
export { Component, component, type ComponentOptions } from "./src/component/component.ts";
export type { TelemetryEntry } from "./src/component/sandbox.ts";
