import type { PublishedResult } from "../contract/call.ts";
import { fail } from "../outcome/outcome.ts";

/** The result that ends a call whose Tool or executor threw: an `error` outcome coded `tool_error`. */
export function toolError(error: unknown): PublishedResult {
  const message = error instanceof Error ? error.message : String(error);
  return {
    outcome: fail("tool_error", message, { details: { name: error instanceof Error ? error.name : typeof error } }),
  };
}
