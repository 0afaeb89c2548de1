import { BrainError } from "../outcome/errors.ts";

/**
 * The path of this Deno executable, after checking that this process may start
 * it: Components run in child Deno processes, so an application that places one
 * needs `--allow-run` for it. Throws `unsupported_runtime` naming the flag otherwise.
 */
export function denoExecutable(purpose: string): string {
  const command = Deno.execPath();
  if (Deno.permissions.querySync({ name: "run", command }).state !== "granted") {
    throw new BrainError(
      "unsupported_runtime",
      `${purpose} runs in a child Deno process; run this application with --allow-run=${command}`,
      { details: { permission: "run", command } },
    );
  }
  return command;
}

/** The `deno run` flags every Brain child starts with: no config, lock file, prompt or project node_modules. */
export const CHILD_RUN_FLAGS: readonly string[] = [
  "run",
  "--quiet",
  "--no-config",
  "--no-lock",
  "--no-prompt",
  "--node-modules-dir=none",
];
