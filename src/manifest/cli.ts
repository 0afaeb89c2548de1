/**
 * The brain-tools command line. `check <module>` prints the module's Tool
 * manifest as JSON and exits 0; a failure prints `code: message` to stderr and
 * exits 1; a usage error exits 2.
 *
 * ```sh
 * deno run --allow-read=. jsr:@aexhq/brain/tools/cli check ./mod.ts
 * ```
 *
 * @module
 */
import { BrainError } from "../outcome/errors.ts";
import { inspectToolModule } from "./inspect.ts";

const USAGE = "usage: brain-tools check <module>";

/** Runs the command with `args` and returns its exit code; output goes to stdout and stderr. */
export async function runCli(args: string[]): Promise<number> {
  if (!Array.isArray(args) || args.length !== 2 || args[0] !== "check" || typeof args[1] !== "string") {
    console.error(USAGE);
    return 2;
  }
  try {
    console.log(JSON.stringify(await inspectToolModule(args[1]), null, 2));
    return 0;
  } catch (error) {
    if (!(error instanceof BrainError)) throw error;
    console.error(`${error.code}: ${error.message}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await runCli(Deno.args));
