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

/**
 * A copy of the probe fixture with a custom section of `padding` bytes appended, written under `dir`:
 * a Component that behaves as the probe does, with other bytes (another content hash, a larger upload).
 */
export async function probeVariant(dir: string, padding: number): Promise<URL> {
  const name = new TextEncoder().encode("padding");
  const body = [name.length, ...name, ...new Uint8Array(padding)];
  const size: number[] = [];
  for (let rest = body.length; size.length === 0 || rest > 0; rest >>>= 7) {
    size.push((rest & 0x7f) | (rest > 0x7f ? 0x80 : 0));
  }
  const bytes = new Uint8Array([...await Deno.readFile(PROBE), 0, ...size, ...body]);
  const path = `${dir}/probe-${padding}.wasm`;
  await Deno.writeFile(path, bytes);
  return new URL(path, `file://${Deno.cwd()}/`);
}
