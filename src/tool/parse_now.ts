import { z } from "zod";

/** What a zod safe parse gives: the parsed data, or the error with every issue. */
export type SafeParsed = { success: true; data: unknown } | { success: false; error: z.ZodError };

/**
 * `schema.safeParseAsync(value)` without the turns of the event loop it takes
 * when nothing in the schema is asynchronous. zod runs the schema in its async
 * mode, as parseAsync does, with the same defaults, transforms and checks, once;
 * only an asynchronous check or transform makes the result a promise.
 */
export function safeParseNow(schema: z.ZodType, value: unknown): SafeParsed | Promise<SafeParsed> {
  const context = { async: true };
  const ran = schema._zod.run({ value, issues: [] }, context);
  return ran instanceof Promise ? ran.then((payload) => parsed(payload, context)) : parsed(ran, context);
}

function parsed(payload: z.core.ParsePayload, context: z.core.ParseContextInternal): SafeParsed {
  if (payload.issues.length === 0) return { success: true, data: payload.value };
  const config = z.config();
  return {
    success: false,
    error: new z.ZodError(payload.issues.map((issue) => z.core.util.finalizeIssue(issue, context, config))),
  };
}
