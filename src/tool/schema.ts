import { z } from "zod";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";

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
  try {
    return z.toJSONSchema(schema, { io: role }) as Record<string, JsonValue>;
  } catch (error) {
    throw new BrainError(
      "invalid_schema",
      `tool ${toolName}: its ${role} schema has no JSON Schema: ${(error as Error).message}`,
      { cause: error },
    );
  }
}
