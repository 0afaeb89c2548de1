import { z } from "zod";
import type { Component } from "../../component/component.ts";
import { brainEnv } from "../../env/brain_env.ts";
import type { BrainEnvGrant } from "../../contract/grant.ts";
import type { AdvertisedTool } from "../../journal/records.ts";
import type { PlacedTool } from "../../contract/placement.ts";
import { deepFreeze } from "../../util/freeze.ts";
import type { WireUpload } from "../protocol.ts";

/**
 * Brain's placement of a Component a remote client uploaded: it runs in this
 * server's sandboxes, admitted under this server's allow-list. Input and output are
 * validated with schemas rebuilt from the advertised JSON Schemas, since the
 * client's Zod schemas do not travel.
 */
export function uploadedTool(advertised: AdvertisedTool, upload: WireUpload, implementation: Component): PlacedTool {
  const env = upload.env && brainEnv({ name: upload.env.name, ...(upload.env.grant as BrainEnvGrant) });
  return Object.freeze({
    tool: Object.freeze({
      name: advertised.name,
      description: advertised.description,
      input: z.fromJSONSchema(advertised.inputSchema),
      output: advertised.outputSchema && z.fromJSONSchema(advertised.outputSchema),
      inputSchema: advertised.inputSchema,
      outputSchema: advertised.outputSchema,
      run: undefined,
    }),
    options: deepFreeze(structuredClone(upload.options)),
    env,
    implementation,
    advertised: deepFreeze(structuredClone(advertised)),
  });
}
