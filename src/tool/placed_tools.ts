import { BrainError } from "../outcome/errors.ts";
import { isList } from "../outcome/known_keys.ts";
import { errorText } from "../util/error_text.ts";
import type { PlacedTool } from "../contract/placement.ts";
import { factoryImplementation } from "./tool.ts";

/**
 * Checks a session's `tools` before anything is stored: an array of placed
 * Tools (`lookup()`, not the factory `lookup`) with unique names. Returns them
 * as read now, a list of its own: what the caller's array holds later is not
 * what the session gets. Throws `invalid_tool` for a factory or another value,
 * `duplicate_tool` for a name placed twice.
 */
export function checkPlacedTools(tools: unknown): readonly PlacedTool[] {
  if (!isList(tools)) {
    throw new BrainError("invalid_tool", "tools must be an array of placed Tools, such as tools: [lookup()]");
  }
  const names = new Set<string>();
  const listed = readTools(tools);
  for (const [index, placed] of listed.entries()) {
    if (factoryImplementation(placed)) {
      const { name } = placed as { name: string };
      throw new BrainError(
        "invalid_tool",
        `tools[${index}] is the factory of tool ${name}, not a placement: call it, as in tools: [${name}()] ` +
          `(or ${name}({ env, ...options }))`,
      );
    }
    if (!looksPlaced(placed)) {
      throw new BrainError(
        "invalid_tool",
        `tools[${index}] is not a placed Tool: declare it with tool({ ... }) and place it, as in tools: [lookup()]`,
      );
    }
    if (names.has(placed.tool.name)) {
      throw new BrainError("duplicate_tool", `tool ${placed.tool.name} is placed twice in one session`);
    }
    names.add(placed.tool.name);
  }
  return listed as PlacedTool[];
}

/** The items of `tools` read once; `invalid_tool` for a Proxy whose items cannot be read. */
function readTools(tools: readonly unknown[]): unknown[] {
  try {
    return [...tools];
  } catch (error) {
    throw new BrainError("invalid_tool", `tools cannot be read: ${errorText(error)}`);
  }
}

/** True for a value shaped as a placement; false also for one whose getters or Proxy traps throw. */
function looksPlaced(placed: unknown): placed is PlacedTool {
  try {
    const { tool, advertised } = placed as PlacedTool;
    return typeof tool?.name === "string" && typeof advertised === "object" && advertised !== null;
  } catch {
    return false;
  }
}
