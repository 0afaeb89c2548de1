import { z } from "zod";
import { Brain, brainEnv, type BrainOptions, type Component, component, type TelemetryEntry, tool } from "../../mod.ts";

/** The probe fixture, built from probe.wat by `deno task build:components`. */
export const PROBE = new URL("./fixtures/probe.wasm", import.meta.url);
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

/** Collects telemetry entries. */
export function telemetrySink(): { entries: TelemetryEntry[]; telemetry: (entry: TelemetryEntry) => void } {
  const entries: TelemetryEntry[] = [];
  return { entries, telemetry: (entry) => entries.push(entry) };
}

/** Ten seconds from now: every test call is bounded. */
export const soon = (): number => Date.now() + 10_000;

/**
 * Child processes of `parent` (this test process by default) that are Component
 * sandboxes and still alive (not zombies); with `onCpu`, only those on a CPU right now.
 */
export function runningSandboxes(onCpu = false, parent = Deno.pid): Promise<number[]> {
  return runningChildren("sandbox_main.ts", onCpu, parent);
}

/** Child processes of `parent` running `script` and still alive; with `onCpu`, only those on a CPU right now. */
export async function runningChildren(script: string, onCpu = false, parent = Deno.pid): Promise<number[]> {
  const { stdout } = await new Deno.Command("ps", { args: ["-eo", "pid=,ppid=,stat=,args="] }).output();
  return new TextDecoder().decode(stdout).split("\n").map((line) => line.trim().split(/\s+/))
    .filter(([, ppid, stat = "Z", ...args]) =>
      Number(ppid) === parent && !stat.startsWith("Z") && (!onCpu || stat.startsWith("R")) &&
      args.some((arg) => arg.endsWith(script))
    )
    .map(([pid]) => Number(pid));
}

/** Resolves once `check` holds, polling every 10 ms; rejects after `withinMs`. */
export async function within(withinMs: number, what: string, check: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`${what} did not happen within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
