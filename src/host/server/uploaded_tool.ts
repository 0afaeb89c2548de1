import { z } from "zod";
import { type Component, withTelemetry } from "../../component/component.ts";
import type { TelemetryEntry } from "../../component/sandbox.ts";
import { brainEnv } from "../../env/brain_env.ts";
import type { BrainEnvGrant } from "../../contract/grant.ts";
import type { AdvertisedTool } from "../../journal/records.ts";
import type { PlacedTool } from "../../contract/placement.ts";
import type { JsonValue } from "../../outcome/json.ts";
import { deepFreeze } from "../../util/freeze.ts";
import type { WireUpload } from "../protocol.ts";
import type { ParsedValue } from "./registry.ts";

/** Parses a value with the declaring application's schema for it, over the host connection. */
export type RemoteParse = (io: "input" | "output", value: JsonValue) => Promise<ParsedValue>;

/**
 * Brain's placement of a Component a remote client uploaded: it runs in this
 * server's sandboxes, admitted under this server's allow-list. Its input and
 * output are parsed by the client's own Zod schemas (`parse` asks the client),
 * with their defaults, transforms and async checks, inside the call's deadline:
 * this server never compiles a client's schema. Its advertised contract names
 * the upload's content hash. Its telemetry goes to `telemetry`, which forwards it
 * to the client whose `component(url, { telemetry })` listener receives it.
 */
export function uploadedTool(
  advertised: AdvertisedTool,
  upload: WireUpload,
  component: Component,
  parse: RemoteParse,
  telemetry: (entry: TelemetryEntry) => void,
): PlacedTool {
  const env = upload.env && brainEnv({ name: upload.env.name, ...(upload.env.grant as BrainEnvGrant) });
  return Object.freeze({
    tool: Object.freeze({
      name: advertised.name,
      description: advertised.description,
      input: askedSchema((value) => parse("input", value)),
      output: advertised.outputSchema && askedSchema((value) => parse("output", value)),
      inputSchema: advertised.inputSchema,
      outputSchema: advertised.outputSchema,
      run: undefined,
    }),
    options: deepFreeze(structuredClone(upload.options)),
    env,
    implementation: withTelemetry(component, telemetry),
    // The bytes are part of the contract the session keeps: reopening it needs the same ones.
    advertised: deepFreeze({ ...structuredClone(advertised), sha256: upload.sha256 }),
  });
}

/** A schema whose parse is the client's answer: its value, or its issues. */
function askedSchema(ask: (value: JsonValue) => Promise<ParsedValue>): z.ZodType {
  return z.unknown().transform(async (value, ctx) => {
    const answer = await ask(value as JsonValue);
    if ("value" in answer) return answer.value;
    // The host's own issues, Zod code included, so a remote Component's invalid_input details match an embedded one's.
    for (const issue of answer.issues) ctx.addIssue({ ...issue, input: value } as z.core.$ZodRawIssue);
    return z.NEVER;
  });
}
