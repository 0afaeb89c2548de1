import { z } from "zod";
import { BrainError } from "../outcome/errors.ts";
import { findNonJson, type JsonValue } from "../outcome/json.ts";
import { errorText } from "../util/error_text.ts";

/**
 * Exports a zod schema as JSON Schema: `io: "input"` describes what parsing
 * accepts (defaulted fields optional), `io: "output"` the parsed value.
 * Unrepresentable schemas fail here, when the Tool is declared.
 */
export function exportSchema(
  toolName: string,
  role: "input" | "output",
  schema: z.ZodType,
): Record<string, JsonValue> {
  checkZod4(toolName, role, schema);
  let exported: Record<string, JsonValue>;
  try {
    exported = z.toJSONSchema(schema, { io: role }) as Record<string, JsonValue>;
  } catch (error) {
    // zod 4 reads every part's `_zod.def`: a TypeError means a part of the schema is no zod 4 schema.
    const hint = error instanceof TypeError
      ? "; a part of it is not a zod 4 schema (a zod 3 schema inside a zod 4 one?): build it all with " +
        'import { z } from "zod" (zod 4)'
      : "";
    throw new BrainError(
      "invalid_schema",
      `tool ${toolName}: its ${role} schema has no JSON Schema: ${errorText(error)}${hint}`,
      { cause: error },
    );
  }
  // A session keeps its Tools' schemas as JSON, wherever it runs: one it could not keep fails here, not there.
  const unkept = findNonJson(exported);
  if (unkept !== undefined) {
    throw new BrainError(
      "invalid_schema",
      `tool ${toolName}: its ${role} JSON Schema is not JSON Brain keeps: ${unkept}`,
    );
  }
  return exported;
}

/**
 * Exports an input schema, which must describe a JSON object: models call a
 * Tool with named arguments, and no model API accepts other tool parameters.
 * `z.unknown()` and `z.any()` (no constraint at all) are accepted as they are.
 */
export function exportInputSchema(toolName: string, schema: z.ZodType): Record<string, JsonValue> {
  const exported = exportSchema(toolName, "input", schema);
  const { $schema: _, ...constraints } = exported;
  if (exported.type === "object" || Object.keys(constraints).length === 0) return exported;
  const described = typeof exported.type === "string" ? `type ${exported.type}` : "a schema that is not one object";
  throw new BrainError(
    "invalid_schema",
    `tool ${toolName}: its input schema has ${described}; models call a Tool with named arguments, ` +
      "so declare input as z.object({ ... })",
    { details: exported },
  );
}

/**
 * Throws `invalid_schema` unless `schema` is a zod 4 schema. A zod 3 schema
 * (which has `_def` but no `_zod`) would otherwise fail deep inside zod.
 */
export function checkZod4(toolName: string, role: string, schema: unknown): void {
  if (isZod4(schema)) return;
  if (schema === undefined && role === "input") {
    throw new BrainError(
      "invalid_schema",
      `tool ${toolName}: declare its input, as in input: z.object({ id: z.string() })`,
    );
  }
  const zod3 = typeof schema === "object" && schema !== null && hasKey(schema, "_def") && !hasKey(schema, "_zod");
  throw new BrainError(
    "invalid_schema",
    `tool ${toolName}: its ${role} schema is ${zod3 ? "a zod 3 schema" : "not a zod schema"}; Brain needs zod 4: ` +
      'run deno add npm:zod@4 and import { z } from "zod"',
  );
}

/** `key in value`, false for a Proxy whose `has` trap throws. */
function hasKey(value: object, key: string): boolean {
  try {
    return key in value;
  } catch {
    return false;
  }
}

/** True for a zod 4 schema: one whose `_zod` core can run a parse; false for a look-alike, even one whose getters throw. */
function isZod4(schema: unknown): boolean {
  if (typeof schema !== "object" || schema === null) return false;
  try {
    const core = (schema as { _zod?: { run?: unknown } })._zod;
    return typeof core === "object" && core !== null && typeof core.run === "function" &&
      typeof (schema as { safeParse?: unknown }).safeParse === "function";
  } catch {
    return false;
  }
}
