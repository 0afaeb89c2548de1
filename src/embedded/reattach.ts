import type { AdvertisedTool } from "../journal/records.ts";
import { BrainError } from "../outcome/errors.ts";

/** What reattachment compares: where a Tool runs, the schemas it advertised, and a Component's bytes. */
const COMPARED = ["implementation", "env", "inputSchema", "outputSchema", "sha256"] as const;

/**
 * Checks that `tools` are exactly the Tools a session advertised, with identical
 * input and output schemas (and, for a Component, identical bytes, unless the
 * session predates keeping their hash); throws `reattach_mismatch` naming the
 * Tool and the first difference (its JSON Pointer, the saved and the given value).
 */
export function checkReattachment(sessionId: string, advertised: AdvertisedTool[], tools: AdvertisedTool[]): void {
  const saved = new Map(advertised.map((entry) => [entry.name, entry]));
  const given = new Map(tools.map((entry) => [entry.name, entry]));
  for (const name of saved.keys()) {
    if (!given.has(name)) mismatch(sessionId, name, "it was placed in the session but is missing now");
  }
  for (const [name, now] of given) {
    const before = saved.get(name);
    if (!before) mismatch(sessionId, name, "it was not placed in the session");
    for (const field of COMPARED) {
      if (field === "sha256" && before.sha256 === undefined) continue;
      const difference = firstDifference(before[field], now[field], "");
      if (difference) mismatch(sessionId, name, `its ${field} differs at ${difference}`);
    }
  }
}

function mismatch(sessionId: string, tool: string, difference: string): never {
  throw new BrainError("reattach_mismatch", `session ${sessionId}: tool ${tool}: ${difference}`, {
    details: { tool, difference },
  });
}

/** The first place two JSON values differ, as `pointer: was X, now Y`, or undefined when they are equal. */
function firstDifference(before: unknown, now: unknown, pointer: string): string | undefined {
  if (isContainer(before) && isContainer(now) && Array.isArray(before) === Array.isArray(now)) {
    const names = [...new Set([...Object.keys(before), ...Object.keys(now)])].sort();
    for (const name of names) {
      const inner = `${pointer}/${name.replaceAll("~", "~0").replaceAll("/", "~1")}`;
      const found = firstDifference(
        (before as Record<string, unknown>)[name],
        (now as Record<string, unknown>)[name],
        inner,
      );
      if (found) return found;
    }
    return undefined;
  }
  if (Object.is(before, now)) return undefined;
  return `${pointer || "/"}: was ${show(before)}, now ${show(now)}`;
}

function isContainer(value: unknown): value is object {
  return typeof value === "object" && value !== null;
}

function show(value: unknown): string {
  return value === undefined ? "absent" : JSON.stringify(value);
}
