/**
 * A Component call against the same logic as an in-process Tool: the inspect
 * listing (back to back, and after a pause as an Agentloop's calls come), a
 * burst of emits (each blocks the guest until Brain commits it), a new
 * session's first call, and the first admission (transpiling) of a Component.
 * The inspect and emit groups also measure the floor under them: the same
 * frames round-tripped to a child process with nothing behind them.
 *
 *   deno task bench
 */
import { z } from "zod";
import { Brain, brainEnv, component, tool } from "../mod.ts";
import { encodeFrame, FrameReader } from "../src/component/frames.ts";

const INSPECT = new URL("../examples/inspect/inspect.wasm", import.meta.url);
const PROBE = new URL("../tests/component/fixtures/probe.wasm", import.meta.url);
const reader = brainEnv({ name: "reader", filesystem: { workspace: "read" } });
const allow = { workspaceRoot: ".tmp/bench-ws", filesystem: ["read" as const] };

const inspectSpec = {
  name: "inspect",
  description: "Inspect one path.",
  input: z.object({ path: z.string() }),
  output: z.object({ eventSequence: z.number().int(), entries: z.array(z.string()) }),
  options: z.object({ depth: z.number().int().positive() }),
};

/** The inspect logic as an application function (no Environment: it runs in the application), reading the same workspace. */
function inProcessInspect(workspace: () => string) {
  return tool({
    ...inspectSpec,
    run: async ({ path }, ctx) => {
      const eventSequence = await ctx.emit("inspect_started", { path });
      const entries: string[] = [];
      const walk = (dir: string, prefix: string, depth: number) => {
        const names = [...Deno.readDirSync(dir)].sort((a, b) => (a.name < b.name ? -1 : 1));
        for (const entry of names) {
          entries.push(`${prefix}${entry.name}${entry.isDirectory ? "/" : ""}`);
          if (entry.isDirectory && depth > 1) walk(`${dir}/${entry.name}`, `${prefix}${entry.name}/`, depth - 1);
        }
      };
      walk(`${workspace()}/${path}`, "", ctx.options.depth);
      return ctx.finish({ eventSequence, entries });
    },
  });
}

async function session(brain: Brain, placed: Parameters<Brain["sessions"]["create"]>[0]) {
  const created = await brain.sessions.create(placed);
  const workspace = created.workspace("reader")!;
  await Deno.mkdir(`${workspace}/a/b`, { recursive: true });
  for (let i = 0; i < 10; i++) await Deno.writeTextFile(`${workspace}/a/f${i}.txt`, "");
  return created;
}

// The transport floor: frames round-tripped to an idle child process with no Component, glue or journal behind it.
const echo = new Deno.Command(Deno.execPath(), {
  args: ["run", "--quiet", "--no-lock", new URL("./frame_echo_child.ts", import.meta.url).href],
  stdin: "piped",
  stdout: "piped",
}).spawn();
const echoWriter = echo.stdin.getWriter();
const echoReader = new FrameReader(echo.stdout);
const hostFrame = encodeFrame({ type: "reply", reply: { tag: "ok", val: 1 } });

async function roundTrips(count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    void echoWriter.write(hostFrame);
    await echoReader.next();
  }
}

const brain = new Brain({ allow });
const warmComponent = await session(brain, {
  tools: [tool({ ...inspectSpec, implementation: component(INSPECT) })({ env: reader, depth: 2 })],
});
const workspace = warmComponent.workspace("reader")!;
const warmHost = await brain.sessions.create({ tools: [inProcessInspect(() => workspace)({ depth: 2 })] });

Deno.bench("inspect: in-process Tool", { group: "inspect", baseline: true }, async () => {
  await warmHost.call("inspect", { path: "a" });
});

Deno.bench(
  "inspect: Component, warm (pooled sandbox process, fresh instance per call)",
  { group: "inspect" },
  async () => {
    await warmComponent.call("inspect", { path: "a" });
  },
);

Deno.bench(
  "1 frame round trip to an idle child (the floor under any Component call)",
  { group: "inspect" },
  async () => {
    await roundTrips(1);
  },
);

Deno.bench(
  "3 frame round trips (call, emit, finish: the fewest a warm inspect call exchanges)",
  { group: "inspect" },
  async () => {
    await roundTrips(3);
  },
);

// A warm call after the sandbox sat idle, as an Agentloop's calls a model turn apart find it: its instance was made
// while it waited, so the call pays none of that (back to back, the next instance is made between the calls).
const PAUSE_MS = 3;
const paused = (body: () => Promise<unknown>) => async (b: Deno.BenchContext) => {
  await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
  b.start();
  await body();
  b.end();
};
Deno.bench(
  `inspect after a ${PAUSE_MS} ms pause: in-process Tool`,
  { group: "paused", baseline: true, n: 300, warmup: 30 },
  paused(() => warmHost.call("inspect", { path: "a" })),
);
Deno.bench(
  `inspect after a ${PAUSE_MS} ms pause: Component (its instance made while the sandbox waited)`,
  { group: "paused", n: 300, warmup: 30 },
  paused(() => warmComponent.call("inspect", { path: "a" })),
);

// A new session each time: the Component is admitted and transpiled already, so this is the sandbox start.
const cachedInspect = tool({ ...inspectSpec, implementation: component(INSPECT) });
const inProcess = inProcessInspect(() => workspace);
Deno.bench("new session + first call: in-process Tool", { group: "cold", baseline: true }, async () => {
  const cold = await brain.sessions.create({ tools: [inProcess({ depth: 2 })] });
  await cold.call("inspect", { path: "." });
  await cold.end();
});

Deno.bench("new session + first call: cached Component (new sandbox process)", { group: "cold" }, async () => {
  const cold = await brain.sessions.create({ tools: [cachedInspect({ env: reader, depth: 2 })] });
  await cold.call("inspect", { path: "." });
  await cold.end();
});

let firstAdmissions = 0;
Deno.bench(
  "first admission of a new Component (transpile in a child process)",
  { group: "admission", n: 3, warmup: 0 },
  async () => {
    const fresh = new Brain({ allow, components: { cacheDir: `.tmp/bench-cache/${Date.now()}-${firstAdmissions++}` } });
    try {
      await fresh.sessions.create({
        tools: [tool({ ...inspectSpec, implementation: component(INSPECT) })({ env: reader, depth: 2 })],
      });
    } finally {
      await fresh.close();
    }
  },
);

// 100 emits: the probe emits its 3-byte input until the 800-byte budget refuses (8 bytes each).
const EMITS = 100;
const emitBrain = new Brain({ allow, maxEmittedBytes: EMITS * 8 });
const emitComponent = await emitBrain.sessions.create({
  tools: [
    tool({ name: "emit_loop", description: "probe", input: z.unknown(), implementation: component(PROBE) })({
      env: reader,
    }),
  ],
});
const emitHost = await emitBrain.sessions.create({
  tools: [
    tool({
      name: "emit_loop",
      description: "the same loop in process",
      input: z.unknown(),
      run: async (input, ctx) => {
        try {
          for (;;) await ctx.emit("probe", input as string);
        } catch {
          return ctx.finish();
        }
      },
    })(),
  ],
});

Deno.bench(`${EMITS} emits: in-process Tool`, { group: "emit", baseline: true }, async () => {
  await emitHost.call("emit_loop", "x");
});

Deno.bench(`${EMITS} emits: Component (a pipe round trip per emit)`, { group: "emit" }, async () => {
  await emitComponent.call("emit_loop", "x");
});

Deno.bench(`${EMITS} frame round trips to a child (the pipe floor, no Component)`, { group: "emit" }, async () => {
  await roundTrips(EMITS);
});

globalThis.addEventListener("unload", () => {
  echo.kill("SIGKILL");
  void brain.close();
  void emitBrain.close();
});
