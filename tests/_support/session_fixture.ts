import { Brain, type BrainOptions, type BrainSession, type PlacedTool } from "../../mod.ts";

/** A fresh embedded Brain and one session on it; `await using` closes the Brain. */
export interface SessionFixture {
  brain: Brain;
  session: BrainSession;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A session of `tools` on a fresh embedded Brain made with `options`.
 * (A Brain alone needs no fixture: `await using brain = new Brain(options)` closes it.)
 *
 * For example:
 *   await using fixture = await sessionFixture([lookup()]);
 *   const call = await fixture.session.start("lookup", { id: "1" });
 */
export async function sessionFixture(tools: PlacedTool[], options?: BrainOptions): Promise<SessionFixture> {
  const brain = new Brain(options);
  try {
    const session = await brain.sessions.create({ tools });
    return { brain, session, [Symbol.asyncDispose]: () => brain.close() };
  } catch (error) {
    await brain.close();
    throw error;
  }
}
