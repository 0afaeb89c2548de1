import type { AdvertisedTool } from "../journal/records.ts";
import { BrainError } from "../outcome/errors.ts";
import type { PlacedTool } from "../tool/tool.ts";

/**
 * Checks that `tools` are exactly the Tools a session advertised, with identical
 * input and output schemas; throws `reattach_mismatch` naming the Tool and the difference.
 */
export function checkReattachment(sessionId: string, advertised: AdvertisedTool[], tools: readonly PlacedTool[]): void {
  const saved = new Map(advertised.map((entry) => [entry.name, entry]));
  const given = new Map(tools.map((placed) => [placed.advertised.name, placed.advertised]));
  for (const name of saved.keys()) {
    if (!given.has(name)) mismatch(sessionId, name, "it was placed in the session but is missing now");
  }
  for (const [name, now] of given) {
    const before = saved.get(name);
    if (!before) mismatch(sessionId, name, "it was not placed in the session");
    for (const field of ["implementation", "env", "inputSchema", "outputSchema"] as const) {
      if (canonical(before[field]) !== canonical(now[field])) {
        mismatch(
          sessionId,
          name,
          `its ${field} differs: was ${canonical(before[field])}, now ${canonical(now[field])}`,
        );
      }
    }
  }
}

function mismatch(sessionId: string, tool: string, difference: string): never {
  throw new BrainError("reattach_mismatch", `session ${sessionId}: tool ${tool}: ${difference}`, {
    details: { tool, difference },
  });
}

/** JSON text with object keys sorted, so equal schemas compare equal. */
function canonical(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, inner) =>
      inner && typeof inner === "object" && !Array.isArray(inner)
        ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0))
        : inner,
  ) ?? "undefined";
}
