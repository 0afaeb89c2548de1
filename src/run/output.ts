import { z } from "zod";
import { findNonJson, frozenJsonSized, type JsonValue } from "../outcome/json.ts";
import { errorText } from "../util/error_text.ts";
import { issuesJson } from "../outcome/issues.ts";
import { fail, isEnvelope, ok, type Outcome, parseEnvelope } from "../outcome/outcome.ts";
import { type SafeParsed, safeParseNow } from "../tool/parse_now.ts";

/**
 * A Tool's published value, normalized: a valid outcome, or the reason it is
 * not one. A validated `ok` outcome comes with `size`, the UTF-8 size of its
 * JSON text, counted as its value was copied.
 */
export type NormalizedOutput = { outcome: Outcome; invalid?: false; size?: number } | {
  outcome: Outcome;
  invalid: true;
  size?: undefined;
};

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
  try {
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
    return parsed instanceof Promise ? parsed.then(checked, unreadable) : checked(parsed);
  } catch (error) {
    return unreadable(error);
  }
}

/** A value whose getters, Proxy traps or output checks threw: not output Brain can validate. */
function unreadable(error: unknown): NormalizedOutput {
  return invalid(`output validation threw: ${errorText(error)}`);
}

function checked(parsed: SafeParsed): NormalizedOutput {
  if (!parsed.success) {
    return invalid(`output does not match the schema: ${z.prettifyError(parsed.error)}`, issuesJson(parsed.error));
  }
  return validated(parsed.data);
}

/** The size of an `ok` outcome's JSON text but its value's: `{"status":"ok","value":` and `}`. */
const OK_SIZE = '{"status":"ok","value":}'.length;

function validated(value: unknown): NormalizedOutput {
  // A frozen copy: what was checked is what is committed, whatever a getter or Proxy does next.
  const sized = frozenJsonSized(value);
  if (sized === undefined) return invalid(`output is not JSON: ${findNonJson(value) ?? "$ changed while read"}`);
  return { outcome: ok(sized.copy), size: OK_SIZE + sized.size };
}

function invalid(message: string, details?: JsonValue): NormalizedOutput {
  return { outcome: fail("invalid_output", message, details === undefined ? {} : { details }), invalid: true };
}
