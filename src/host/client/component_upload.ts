import { checkComponentEnv, checkComponentOptions, Component } from "../../component/component.ts";
import type { PlacedTool } from "../../contract/placement.ts";
import { BrainError } from "../../outcome/errors.ts";
import type { JsonValue } from "../../outcome/json.ts";
import type { WireUpload } from "../protocol.ts";
import { contentHash } from "../../util/content_hash.ts";

/** A Component placement as a client keeps it to upload: its wire form, with the bytes themselves. */
export type ComponentUpload = Omit<WireUpload, "bytes"> & { bytes: Uint8Array };

/** True when `placed` runs an uploaded Component: on the server, not in this client. */
export function isComponent(placed: PlacedTool): placed is PlacedTool & { implementation: Component } {
  return placed.implementation instanceof Component;
}

/**
 * A Component placement as it is uploaded: bytes and their hash, the brainEnv grant and the parsed options.
 * A placement in another kind of Environment, or one with setup or control, is `unsupported_runtime`.
 */
export async function componentUpload(
  { tool, implementation, env, options }: PlacedTool & { implementation: Component },
): Promise<ComponentUpload> {
  checkComponentEnv(implementation.url, env);
  checkComponentOptions(implementation.url, options);
  if (env && (env.setup || env.control?.length)) {
    throw new BrainError(
      "unsupported_runtime",
      `tool ${tool.name}: an uploaded Component runs only in a brainEnv without setup or control`,
    );
  }
  const bytes = await implementation.load();
  return {
    tool: tool.name,
    url: implementation.url.href,
    sha256: await contentHash(bytes as Uint8Array<ArrayBuffer>),
    bytes,
    ...(env ? { env: { name: env.name, grant: env.grant as Record<string, JsonValue> } } : {}),
    options: options as Record<string, JsonValue>,
  };
}

/** `upload` as a request names it: with its bytes (base64) when the server lacks them, else by its hash alone. */
export function wireUpload({ bytes, ...named }: ComponentUpload, withBytes: boolean): WireUpload {
  return withBytes ? { ...named, bytes: bytes.toBase64() } : named;
}
