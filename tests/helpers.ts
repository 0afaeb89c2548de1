import { Brain, type BrainOptions, type BrainSession, type PlacedTool } from "../mod.ts";

/** Runs `fn` with a session of `tools` on a fresh embedded Brain, closing the Brain afterwards. */
export async function withSession(
  tools: PlacedTool[],
  fn: (session: BrainSession, brain: Brain) => Promise<void>,
  options?: BrainOptions,
): Promise<void> {
  const brain = new Brain(options);
  try {
    await fn(await brain.sessions.create({ tools }), brain);
  } finally {
    await brain.close();
  }
}

/** Resolves after `ms` milliseconds. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
