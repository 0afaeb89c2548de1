import type { PublishedResult } from "../contract/call.ts";
import { fail } from "../outcome/outcome.ts";

/** The result that ends a call whose Tool or executor threw: an `error` outcome coded `tool_error`. */
export function toolError(error: unknown): PublishedResult {
  // String(): a thrown Error's message and name are whatever the Tool set them to.
  const message = String(error instanceof Error ? error.message : error);
  return {
    outcome: fail("tool_error", message, {
      details: { name: String(error instanceof Error ? error.name : typeof error) },
    }),
  };
}
