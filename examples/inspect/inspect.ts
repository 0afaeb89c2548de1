/**
 * The inspect Tool from the spec: a Component (built from inspect.wat by
 * `deno task build:components`) that lists a path in its workspace to a depth.
 *
 *   deno run --allow-read=. --allow-write=.tmp --allow-run examples/inspect/inspect.ts
 *
 * @module
 */
import { Brain, brainEnv, component, type Outcome, tool } from "../../mod.ts";
import { z } from "zod";

/** The inspect Tool; place it with a Brain Environment that grants a workspace. */
export const inspect = tool({
  name: "inspect",
  description: "Inspect one path.",
  input: z.object({ path: z.string() }),
  output: z.object({ eventSequence: z.number().int(), entries: z.array(z.string()) }),
  options: z.object({ depth: z.number().int().positive() }),
  implementation: component(new URL("./inspect.wasm", import.meta.url)),
});

/** Lists a small workspace with inspect and returns the outcome and the journal's record kinds. */
export async function main(): Promise<{ outcome: Outcome; kinds: string[] }> {
  const brain = new Brain({ allow: { workspaceRoot: ".tmp/ws", filesystem: ["read"] } });
  try {
    const reader = brainEnv({ name: "reader", filesystem: { workspace: "read" } });
    const session = await brain.sessions.create({ tools: [inspect({ env: reader, depth: 2 })] });
    const workspace = session.workspace("reader")!;
    await Deno.mkdir(`${workspace}/docs/guides`, { recursive: true });
    await Deno.writeTextFile(`${workspace}/docs/readme.md`, "# hello\n");
    const end = await session.call("inspect", { path: "." }, { deadline: Date.now() + 10_000 });
    return { outcome: end.outcome, kinds: (await session.read()).map((record) => record.kind) };
  } finally {
    await brain.close();
  }
}

if (import.meta.main) console.log(JSON.stringify(await main(), null, 2));
