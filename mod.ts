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
export { findNonJson, isJsonValue, type JsonValue, MAX_JSON_DEPTH } from "./src/outcome/json.ts";
export { MAX_NAME_LENGTH } from "./src/util/names.ts";
export {
  BRAIN_MAX_CANCEL_REASON,
  BRAIN_MAX_INPUT_BYTES,
  BRAIN_MAX_LATE_RECORDS,
  BRAIN_TELEMETRY_LIMITS,
} from "./src/contract/budgets.ts";
export {
  fail,
  isEnvelope,
  isFailure,
  ok,
  type Outcome,
  OUTCOME_STATUSES,
  type OutcomeError,
  type OutcomeStatus,
} from "./src/outcome/outcome.ts";
export type { Journal, ReadOptions, SubscribeOptions } from "./src/journal/journal.ts";
export type { AcquireOptions, AppendOptions, Lease } from "./src/journal/lease.ts";
export type {
  AdvertisedTool,
  ConversationRequest,
  JournalRecord,
  RecordBody,
  RecordKind,
  SessionMeta,
  TerminalCause,
} from "./src/journal/records.ts";
export { MemoryJournal } from "./src/journal/memory.ts";
export { KvJournal, MAX_RECORDS_PER_APPEND } from "./src/journal/kv.ts";
export { formatRecord } from "./src/journal/format.ts";
export { hostEnv } from "./src/env/host_env.ts";
export {
  type Environment,
  type EnvironmentAdmission,
  type EnvironmentOptions,
  type EnvironmentTools,
  type SetupContext,
  type SetupScript,
} from "./src/contract/placement.ts";
export { ENVIRONMENT_OPERATIONS, type EnvironmentOperation } from "./src/contract/grant.ts";
export type { EnvironmentControl, EnvironmentInfo, EnvironmentSpec } from "./src/contract/control.ts";
export { httpEnv, type HttpEnvOptions } from "./src/env/http_env.ts";
export { MODEL_TOKEN_HEADER, MODEL_URL_HEADER, type ModelAccess } from "./src/contract/placement.ts";
export { HTTP_JSON_METHODS, type HttpJsonDescriptor } from "./src/env/http_json.ts";
export { brainEnv, type BrainEnvironment, isBrainEnv } from "./src/env/brain_env.ts";
export { type BrainEnvGrant } from "./src/contract/grant.ts";
export { checkGrant, grantPermissions, netAllowed } from "./src/env/grants.ts";
export { type AllowList } from "./src/contract/grant.ts";
export { http, type HttpOptions, httpTool } from "./src/http/http_tool.ts";
export { type ToolExtension, toolExtension, type ToolExtensionOptions } from "./src/extension/extension.ts";
export { EXTENSION_MAX_REPORT_BYTES, extensionEnv, type ExtensionEnvOptions } from "./src/extension/extension_env.ts";
export type { ExtensionAck, ExtensionReport } from "./src/extension/protocol.ts";
export { Finished, type ResultOptions, type ToolContext } from "./src/contract/context.ts";
export type { CallSink, Invocation, PublishedResult } from "./src/contract/call.ts";
export type {
  Admission,
  BrainResources,
  ComponentSettings,
  Dispatch,
  Implementation,
} from "./src/contract/placement.ts";
export type { Descriptor } from "./src/contract/grant.ts";
export {
  type FactoryImplementation,
  factoryImplementation,
  type OutputOf,
  type ParsedOptions,
  type Placement,
  type RunFunction,
  tool,
  type ToolFactory,
  type ToolSpec,
} from "./src/tool/tool.ts";
export { type PlacedTool, type Schema, type ToolDeclaration } from "./src/contract/placement.ts";
export { Activation, BRAIN_MAX_EMITTED_BYTES, BRAIN_MAX_MODEL_CALLS } from "./src/session/activation.ts";
export type { CallEnd } from "./src/session/call_state.ts";
export { type CallOptions, Session, type ToolCall } from "./src/session/session.ts";
export {
  Brain,
  type BrainOptions,
  type BrainSession,
  type CreateSessionOptions,
  type GetSessionOptions,
  type RemoteBrainOptions,
  type Sessions,
} from "./src/brain/brain.ts";
export type {
  ModelCallOrigin,
  ModelCredentials,
  ModelMessage,
  ModelProvider,
  ModelRequest,
  ModelResult,
  ModelToolCall,
  ModelToolCallError,
  ModelToolSpec,
  ModelUsage,
  NormalizedModelRequest,
  ProviderCall,
  ResponseFormat,
  SessionModel,
} from "./src/model/types.ts";
export { ScriptedProvider, type ScriptedReply, type ScriptStep } from "./src/model/testing.ts";
export { openAICompatible, type OpenAICompatibleOptions } from "./src/model/openai.ts";
export type { AssistantMessage, SendOptions } from "./src/session/conversation.ts";
export { WAKE_BATCH_MS, WakeBatcher, type WakeTimers } from "./src/agentloop/wake.ts";
export { AGENTLOOP_TOOL_DEADLINE_MS, type AgentloopOptions } from "./src/agentloop/agentloop.ts";
export {
  type BrainServer,
  type BrainServerOptions,
  createBrainServer,
  serveBrain,
  type ServedBrain,
} from "./src/host/server/server.ts";
export type { Viewer, ViewerOptions } from "./src/viewer/viewer.ts";
export type { HostConnectionEvent } from "./src/host/client/connection.ts";
export { SERVER_LIMITS, type ServerLimits } from "./src/host/server/limits.ts";
export type { HostAdmission } from "./src/host/server/registry.ts";
export { hashToken, type HostCredentials, type HostRegistration } from "./src/embedded/host_token.ts";
export { Component, component, type ComponentOptions } from "./src/component/component.ts";
export type { TelemetryEntry } from "./src/component/sandbox.ts";
