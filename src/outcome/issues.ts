import type { z } from "zod";
import type { JsonValue } from "./json.ts";

/** Zod issues as JSON details: path, code and message of each. */
export function issuesJson(error: z.ZodError): JsonValue {
  return error.issues.map((issue) => ({
    path: issue.path.map((part) => typeof part === "symbol" ? String(part) : part),
    code: issue.code,
    message: issue.message,
  }));
}
