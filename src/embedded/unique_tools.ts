import { BrainError } from "../outcome/errors.ts";
import type { PlacedTool } from "../contract/placement.ts";

/** Throws `duplicate_tool` when two placements in one session share a name. */
export function checkUniqueTools(tools: readonly PlacedTool[]): void {
  const names = new Set<string>();
  for (const placed of tools) {
    if (names.has(placed.tool.name)) {
      throw new BrainError("duplicate_tool", `tool ${placed.tool.name} is placed twice in one session`);
    }
    names.add(placed.tool.name);
  }
}
