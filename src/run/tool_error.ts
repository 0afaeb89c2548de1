import type { PublishedResult } from "../contract/call.ts";
import { fail } from "../outcome/outcome.ts";
import { errorName, errorText } from "../util/error_text.ts";

/** The result that ends a call whose Tool or executor threw: an `error` outcome coded `tool_error`. */
export function toolError(error: unknown): PublishedResult {
  // A thrown Error's message and name are whatever the Tool set them to, or a getter that throws.
  return { outcome: fail("tool_error", errorText(error), { details: { name: errorName(error) } }) };
}
