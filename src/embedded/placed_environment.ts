import type { Environment, EnvironmentAdmission, EnvironmentTools } from "../contract/placement.ts";
import { BrainError } from "../outcome/errors.ts";
import { isInstance, isList, readList } from "../outcome/known_keys.ts";
import { errorText } from "../util/error_text.ts";
import { promised } from "../util/promised.ts";
import { settledWithin } from "../util/settled_within.ts";

/** How long ending a session waits for its Environments to close what they opened for it. */
const RELEASE_WAIT_MS = 10_000;

/**
 * What `env`, `environments[index]` of a session, places in it, read once: its
 * `place` must resolve with `{ tools, close }`, a list and a function
 * (`invalid_tool` otherwise); anything else it throws or rejects with, other
 * than a `BrainError`, is `setup_failed`. The `close` returned never throws.
 */
export async function placeTools(
  env: Environment,
  index: number,
  admission: EnvironmentAdmission,
): Promise<EnvironmentTools> {
  let answer: unknown;
  try {
    answer = await env.place!(admission);
  } catch (error) {
    if (isInstance(error, BrainError)) throw error;
    throw new BrainError("setup_failed", `environments[${index}] failed to place its tools: ${errorText(error)}`, {
      cause: error,
    });
  }
  let tools: unknown, close: unknown;
  try {
    ({ tools, close } = answer as EnvironmentTools);
  } catch {
    // Read as nothing: refused below.
  }
  if (!isList(tools) || typeof close !== "function") {
    throw new BrainError(
      "invalid_tool",
      `environments[${index}] placed no tools: its place() must resolve with { tools: [...], close() }`,
    );
  }
  return Object.freeze({
    tools: Object.freeze(readList(`the tools environments[${index}] placed`, tools)) as EnvironmentTools["tools"],
    close: () => promised(() => close.call(answer)) as Promise<void>,
  });
}

/**
 * Closes what Environments opened for placed Tools; a failing close does not
 * stop the others, and one that never settles is left after 10 s.
 */
export async function releaseTools(placed: readonly EnvironmentTools[]): Promise<void> {
  await settledWithin(Promise.allSettled(placed.map((entry) => entry.close())), RELEASE_WAIT_MS);
}
