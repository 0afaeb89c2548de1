/**
 * The Brain server: sessions for remote applications (`new Brain({ url, token, host })`)
 * over one WebSocket per host, served by hono.
 *
 * @example
 * ```ts
 * import { serveBrain } from "@aexhq/brain/server";
 *
 * const served = await serveBrain({ port: 0, hostTokens: { app: "secret" } });
 * console.log(served.url.startsWith("http://127.0.0.1:")); // true
 * await served.shutdown();
 * ```
 *
 * @module
 */
export {
  type BrainServer,
  type BrainServerOptions,
  createBrainServer,
  serveBrain,
  type ServedBrain,
} from "./server.ts";
export { SERVER_LIMITS, type ServerLimits } from "./limits.ts";
export type { HostAdmission } from "./registry.ts";
export { hashToken, type HostCredentials, type HostRegistration } from "../../embedded/host_token.ts";
export type { BrainOptions } from "../../embedded/embedded.ts";
export type * from "../../journal/mod.ts";
export type { AllowList } from "../../contract/grant.ts";
export type { ComponentSettings } from "../../contract/placement.ts";
export type { ModelCredentials, ModelProvider, ModelResult, ProviderCall, SessionModel } from "../../model/types.ts";
export type { AcquireOptions, AppendOptions, Lease } from "../../journal/lease.ts";
