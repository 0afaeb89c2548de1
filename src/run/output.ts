import { z } from "zod";
import { findNonJson, type JsonValue } from "../outcome/json.ts";
import { issuesJson } from "../outcome/issues.ts";
import { fail, isEnvelope, ok, type Outcome, parseEnvelope } from "../outcome/outcome.ts";
import { type SafeParsed, safeParseNow } from "./parse_now.ts";

/** A Tool's published value, normalized: a valid outcome, or the reason it is not one. */
export type NormalizedOutput = { outcome: Outcome; invalid?: false } | { outcome: Outcome; invalid: true };

/**
 * Turns what a Tool published into an outcome. Reserved top-level statuses must
 * form a well-formed envelope; ordinary output and an explicit `ok.value` are
 * validated with `parseAsync` against the output schema, and the value after
 * transforms must be JSON. Non-success outcomes bypass output validation.
 */
export async function normalizeOutput(output: z.ZodType | undefined, value: unknown): Promise<NormalizedOutput> {
  return await normalizeOutputNow(output, value);
}

/**
 * {@linkcode normalizeOutput}, returning the outcome itself rather than a promise
 * when nothing in the output schema is asynchronous.
 */
export function normalizeOutputNow(
  output: z.ZodType | undefined,
  value: unknown,
): NormalizedOutput | Promise<NormalizedOutput> {
  let raw = value;
  if (isEnvelope(value)) {
    const parsed = parseEnvelope(value);
    if ("malformed" in parsed) return invalid(`malformed outcome envelope: ${parsed.malformed}`);
    if (parsed.outcome.status !== "ok") {
      // An optional field set to undefined is no JSON either; refused here so every transport agrees.
      const nonJson = findNonJson(value);
      return nonJson ? invalid(`the outcome is not JSON: ${nonJson}`) : { outcome: parsed.outcome as Outcome };
    }
    raw = parsed.outcome.value;
  }
  if (!output) return validated(raw);
  const parsed = safeParseNow(output, raw);
  return parsed instanceof Promise ? parsed.then(checked) : checked(parsed);
}

function checked(parsed: SafeParsed): NormalizedOutput {
  if (!parsed.success) {
    return invalid(`output does not match the schema: ${z.prettifyError(parsed.error)}`, issuesJson(parsed.error));
  }
  return validated(parsed.data);
}

function validated(value: unknown): NormalizedOutput {
  const nonJson = findNonJson(value);
  if (nonJson) return invalid(`output is not JSON: ${nonJson}`);
  return { outcome: ok(value as JsonValue) };
}

function invalid(message: string, details?: JsonValue): NormalizedOutput {
  return { outcome: fail("invalid_output", message, details === undefined ? {} : { details }), invalid: true };
}
