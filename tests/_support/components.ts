import { z } from "zod";
import { Brain, brainEnv, type BrainOptions, type Component, component, tool } from "../../mod.ts";

/** The probe fixture, built from probe.wat by `deno task build:components`. */
export const PROBE = new URL("../component/fixtures/probe.wasm", import.meta.url);
/** The inspect example Component. */
export const INSPECT = new URL("../../examples/inspect/inspect.wasm", import.meta.url);

/** A Brain whose allow-list grants read workspaces under .tmp/ws. */
export function readerBrain(options: BrainOptions = {}): Brain {
  return new Brain({ allow: { workspaceRoot: ".tmp/ws", filesystem: ["read"] }, ...options });
}

/** The read-workspace binding every component test uses. */
export const reader = brainEnv({ name: "reader", filesystem: { workspace: "read" } });

/** A probe Tool whose behaviour is its `name`, taking any JSON input. */
export function probeTool(name: string, implementation: Component = component(PROBE), output?: z.ZodType) {
  return tool({
    name,
    description: `probe ${name}`,
    input: z.unknown(),
    ...(output ? { output } : {}),
    implementation,
  });
}

/** The inspect Tool over `source` (a URL or an existing Component). */
export function inspectTool(source: URL | Component = INSPECT) {
  return tool({
    name: "inspect",
    description: "Inspect one path.",
    input: z.object({ path: z.string() }),
    output: z.object({ eventSequence: z.number().int(), entries: z.array(z.string()) }),
    options: z.object({ depth: z.number().int().positive() }),
    implementation: source instanceof URL ? component(source) : source,
  });
}
