import { z } from "zod";
import type { AdvertisedTool } from "../../journal/records.ts";
import type { Implementation } from "../../contract/placement.ts";
import type { PlacedTool } from "../../contract/placement.ts";
import { deepFreeze } from "../../util/freeze.ts";
import type { RegisteredHost } from "./registry.ts";

/**
 * Brain's placement of an application Tool that runs on a connected host: the
 * contract the host advertised, executed by dispatching to that host's handle.
 * The host validates input and output with the real schemas.
 */
export function remoteTool(host: RegisteredHost, handle: string, advertised: AdvertisedTool): PlacedTool {
  const implementation: Implementation = {
    kind: "host",
    admit: () => Promise.resolve(),
    execute: ({ invocation, sink }) => host.dispatch(handle, invocation, sink),
  };
  return Object.freeze({
    tool: Object.freeze({
      name: advertised.name,
      description: advertised.description,
      input: z.unknown(),
      output: undefined,
      inputSchema: advertised.inputSchema,
      outputSchema: advertised.outputSchema,
      run: undefined,
    }),
    options: Object.freeze({}),
    env: undefined,
    implementation,
    advertised: deepFreeze(structuredClone(advertised)),
  });
}
