import { Brain, type BrainOptions, type BrainSession, type PlacedTool } from "../../mod.ts";

/**
 * A session of `tools` on a fresh embedded Brain made with `options`; `await using` closes that Brain.
 * (A Brain alone needs no fixture: `await using brain = new Brain(options)` closes it.)
 *
 * For example:
 *   await using session = await embeddedSession([lookup()]);
 *   const end = await session.call("lookup", { id: "1" });
 */
export async function embeddedSession(
  tools: PlacedTool[],
  options?: BrainOptions,
): Promise<BrainSession & AsyncDisposable> {
  const brain = new Brain(options);
  try {
    const session = await brain.sessions.create({ tools });
    return Object.assign(session, { [Symbol.asyncDispose]: () => brain.close() });
  } catch (error) {
    await brain.close();
    throw error;
  }
}
