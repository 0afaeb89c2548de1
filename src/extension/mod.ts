/**
 * The Application tool extension: Tools served as a bounded HTTP handler
 * (`toolExtension`) and the Environment that sends calls to it (`extensionEnv`).
 *
 * @example
 * ```ts
 * import { tool } from "@aexhq/brain";
 * import { toolExtension } from "@aexhq/brain/extension";
 * import { z } from "zod";
 *
 * const echo = tool({
 *   name: "echo",
 *   description: "Echo the text.",
 *   input: z.object({ text: z.string() }),
 *   run: ({ text }, ctx) => ctx.finish(text),
 * });
 * const extension = toolExtension({ tools: [echo()], token: "secret" });
 * console.log(typeof extension.fetch); // "function"
 * ```
 *
 * @module
 */
export { type ToolExtension, toolExtension, type ToolExtensionOptions } from "./extension.ts";
export { EXTENSION_MAX_REPORT_BYTES, extensionEnv, type ExtensionEnvOptions } from "./extension_env.ts";
export type { ExtensionAck, ExtensionEnded, ExtensionReport } from "./protocol.ts";
export type * from "../env/mod.ts";
