import { BrainError } from "../outcome/errors.ts";
import { findNonJson, type JsonValue } from "../outcome/json.ts";
import type { PlacedTool } from "../contract/placement.ts";

/**
 * The placed Tool a call names, by name or by the placement itself; throws
 * `unknown_tool` when this handle holds no handler for it.
 */
export function resolveTarget(
  sessionId: string,
  tools: ReadonlyMap<string, PlacedTool>,
  target: PlacedTool | string,
): PlacedTool {
  const name = typeof target === "string" ? target : target?.tool?.name;
  const placed = name === undefined ? undefined : tools.get(name);
  if (!placed || (typeof target !== "string" && placed.tool !== target.tool)) {
    throw new BrainError("unknown_tool", `tool ${name} is not placed in session ${sessionId} with a handler`);
  }
  return placed;
}

/** Throws before anything is committed when a call's input is not JSON or its deadline is not a finite time. */
export function checkCallArguments(tool: string, input: JsonValue, deadline: number | undefined): void {
  const nonJson = findNonJson(input);
  if (nonJson) throw new BrainError("invalid_input", `tool ${tool}: input is not JSON: ${nonJson}`);
  if (deadline !== undefined && !Number.isFinite(deadline)) {
    throw new BrainError("invalid_argument", `deadline must be a finite epoch-milliseconds number, got ${deadline}`);
  }
}
