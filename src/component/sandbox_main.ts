/**
 * A Component sandbox: the child Deno process that runs one Component for one
 * grant. Brain starts it with exactly the grant's permissions, sends `init`,
 * then one `call` at a time. Host calls block on stdin for Brain's reply. Each
 * call gets a fresh instance, so no state crosses calls: it is made ahead, once
 * the call before has ended, while Brain ends that call and dispatches the next
 * (made during a host call instead, it delayed the guest's reply: a warm call
 * took ~30% longer). Brain kills the process at a deadline or cancellation.
 *
 * @module
 */
import { type Frame, SyncFrames } from "./frames.ts";
import { limitMemory, PAGE } from "./memory_limit.ts";
import { permissionMismatch } from "./permission_mismatch.ts";
import type { FromSandbox, HostCall, SandboxCall, SandboxInit, ToSandbox } from "./sandbox_protocol.ts";
import { GuestExit } from "./wasi/cli.ts";
import { type WasiHost, wasiHost } from "./wasi/imports.ts";
import { wasiError } from "./wasi/streams.ts";
import { BRAIN_TELEMETRY_LIMITS } from "../contract/budgets.ts";

const EXPORT = "brain:tool/tool@0.2.0";
type Instance = Record<string, { run(invocation: unknown): void }>;
type Instantiate = (
  getCoreModule: (name: string) => WebAssembly.Module,
  imports: Record<string, unknown>,
  instantiateCore: (module: WebAssembly.Module, imports?: WebAssembly.Imports) => WebAssembly.Instance,
) => Instance;
/** A component instance made for one call, or why it could not be. */
interface Made {
  instance?: Instance;
  error?: string;
  memories: WebAssembly.Memory[];
}

const frames = new SyncFrames();
const report = (message: FromSandbox) => frames.write(message);

/** Set while a call runs: host calls outside a call are refused. */
let calling = false;
let memories: WebAssembly.Memory[] = [];
let wasi: WasiHost | undefined;
/** Makes a fresh instance, once the Component is loaded. */
let fresh: (() => Made) | undefined;
/** The next call's instance, made ahead of it. */
let next: Made | undefined;

/** Makes the next call's instance unless one is ready; no call runs, so a start function's host calls are refused. */
function prepare(): void {
  if (!next && fresh) next = fresh();
}

/** Brain's answer to a host call: its `ok` value, or its `err` thrown as the glue expects. */
function hostCall(op: HostCall["op"], args: HostCall["args"]): unknown {
  if (!calling) throw wasiError({ code: "call_finished", message: "no call is running" });
  frames.write({ type: "host", op } satisfies FromSandbox, args);
  const frame = frames.read();
  const message = frame?.message as ToSandbox | undefined;
  if (frame === undefined || message?.type !== "reply") Deno.exit(0);
  if (message.reply.tag === "err") throw wasiError(message.reply.val);
  return frame.texts.length > 0 ? frame.texts[0] : message.reply.val;
}

function describe(error: unknown): string {
  const payload = (error as { payload?: unknown })?.payload;
  if (typeof payload === "string") return payload;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

async function load(init: SandboxInit) {
  const mismatch = permissionMismatch(init.permissions);
  if (mismatch) throw new Error(`the sandbox's permissions differ from its grant: ${mismatch}`);
  // The glue reads process.env on every call; the sandbox has no env access to give it.
  delete (globalThis as { process?: unknown }).process;
  const modules: Record<string, WebAssembly.Module> = {};
  for (const [name, path] of Object.entries(init.modules)) {
    modules[name] = await WebAssembly.compile(limitMemory(Deno.readFileSync(path), init.memoryBytes));
  }
  const { instantiate } = await import(new URL(`file://${init.glue}`).href) as { instantiate: Instantiate };
  const host = {
    emit: (event: string, json: string) => hostCall("emit", [event, json]),
    emitResult: (outcome: string, content?: string) => hostCall("emit-result", [outcome, content]),
    returned: (outcome?: string, content?: string) => hostCall("returned", [outcome, content]),
    finish: (outcome?: string, content?: string) => hostCall("finish", [outcome, content]),
    model: (request: string) => hostCall("model", [request]),
    telemetry: (level: string, message: string) => {
      if (calling) report({ type: "telemetry", level: cut(level), message: cut(message) });
    },
  };
  wasi = wasiHost({
    workspace: init.workspace,
    write: init.write,
    env: init.env,
    net: init.net,
    output: (stream, text) => {
      if (calling) report({ type: "telemetry", level: stream, message: cut(text) });
    },
  });
  return (): Made => {
    const made: WebAssembly.Memory[] = [];
    try {
      const instance = instantiate(
        (name) => modules[name],
        { ...wasi!.imports, "brain:tool/host": host },
        (module, imports) => {
          const core = new WebAssembly.Instance(module, imports);
          for (const value of Object.values(core.exports)) if (value instanceof WebAssembly.Memory) made.push(value);
          return core;
        },
      );
      return { instance, memories: made };
    } catch (error) {
      return { error: `the Component failed to instantiate: ${describe(error)}`, memories: made };
    }
  };
}

/**
 * True when a memory of the instance is within an eighth of the cap: a guest
 * whose growth was refused fails there, so the failure is the cap's.
 */
function exhausted(memoryBytes: number): boolean {
  const margin = Math.max(PAGE, memoryBytes / 8);
  return memories.some((memory) => memory.buffer.byteLength + margin > memoryBytes);
}

/** Runs one call on a fresh instance and says how it ended. */
function run(instance: Instance, { invocation }: SandboxCall, texts: Frame["texts"], memoryBytes: number): FromSandbox {
  calling = true;
  try {
    const [input, options] = texts;
    instance[EXPORT].run({ tool: invocation.tool, input, options, deadlineAtMs: BigInt(invocation.deadlineAtMs) });
    return { type: "done" };
  } catch (error) {
    if (error instanceof GuestExit && error.ok) return { type: "done" };
    return {
      type: "done",
      error: describe(error),
      exhausted: exhausted(memoryBytes),
      trapped: typeof (error as { payload?: unknown })?.payload !== "string" && !(error instanceof GuestExit),
    };
  } finally {
    calling = false;
    wasi?.endCall();
  }
}

async function serve(): Promise<void> {
  const init = frames.read()?.message as SandboxInit | undefined;
  if (init?.type !== "init") return;
  let make: () => Made;
  try {
    make = fresh = await load(init);
  } catch (error) {
    return report({ type: "failed", message: describe(error), exhausted: error instanceof RangeError });
  }
  prepare();
  report({ type: "ready" });
  for (;;) {
    const frame = frames.read();
    if (frame === undefined) return;
    const message = frame.message as ToSandbox;
    if (message.type !== "call") continue;
    // A made-ahead instance that failed is made again: it may have failed for the previous call's sake.
    const made = next?.instance ? next : make();
    next = undefined;
    memories = made.memories;
    report(
      made.instance ? run(made.instance, message, frame.texts, init.memoryBytes) : {
        type: "done",
        error: made.error,
        exhausted: exhausted(init.memoryBytes),
        trapped: true,
      },
    );
    prepare();
  }
}

if (import.meta.main) await serve();

/** Cuts just past the telemetry limit: Brain refuses the entry without the whole text crossing the pipe. */
function cut(text: string): string {
  const limit = BRAIN_TELEMETRY_LIMITS.maxMessageBytes + 1;
  return typeof text === "string" && text.length > limit ? text.slice(0, limit) : String(text);
}
