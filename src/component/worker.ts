/// <reference lib="deno.worker" />
/**
 * The Worker that runs one Component invocation. It checks that its Deno
 * permissions are exactly the grant, instantiates the transpiled Component with
 * Brain's host imports and the workspace filesystem, calls `run` once and
 * reports how it ended. Brain terminates it afterwards, or at the deadline.
 */
import { permissionMismatch } from "./permissions.ts";
import { blockingCall } from "./sync_channel.ts";
import { workspaceFilesystem } from "./wasi_filesystem.ts";
import type { FromWorker, ToWorker } from "./messages.ts";
import { BRAIN_TELEMETRY_LIMITS } from "../contract/budgets.ts";

type Call = Extract<FromWorker, { type: "call" }>;

const report = (message: FromWorker) => self.postMessage(message);

self.onmessage = async ({ data }: MessageEvent<ToWorker>) => {
  const mismatch = permissionMismatch(data.permissions);
  if (mismatch) {
    return report({ type: "unsupported", message: `the Worker's permissions differ from its grant: ${mismatch}` });
  }
  if ("probe" in data) return report({ type: "ready" });
  // The transpiled glue reads process.env on every call; a Worker without env access must not have it.
  delete (globalThis as { process?: unknown }).process;
  const url = URL.createObjectURL(new Blob([data.glue], { type: "text/javascript" }));
  let instance;
  try {
    const { instantiate } = await import(url);
    const call = (op: Call["op"], args: Call["args"]) => blockingCall(data.channel, report, { type: "call", op, args });
    const filesystem = workspaceFilesystem(data.workspace);
    instance = await instantiate((name: string) => data.modules[name], {
      "brain:tool/host": {
        emit: (event: string, json: string) => call("emit", [event, json]),
        emitResult: (outcome: string, content?: string) => call("emit-result", [outcome, content]),
        returned: (outcome?: string, content?: string) => call("returned", [outcome, content]),
        finish: (outcome?: string, content?: string) => call("finish", [outcome, content]),
        model: (request: string) => call("model", [request]),
        // Cut just past the limit: Brain refuses the entry without the whole text crossing threads.
        telemetry: (level: string, message: string) =>
          report({ type: "telemetry", level: cut(level), message: cut(message) }),
      },
      "wasi:filesystem/types": filesystem.types,
      "wasi:filesystem/preopens": filesystem.preopens,
    });
  } catch (error) {
    return report({ type: "done", error: `the Component failed to instantiate: ${describe(error)}` });
  } finally {
    URL.revokeObjectURL(url);
  }
  try {
    instance["brain:tool/tool@0.2.0"].run({ ...data.invocation, deadlineAtMs: BigInt(data.invocation.deadlineAtMs) });
    report({ type: "done" });
  } catch (error) {
    report({ type: "done", error: describe(error) });
  }
};

function describe(error: unknown): string {
  const payload = (error as { payload?: unknown })?.payload;
  if (typeof payload === "string") return payload;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function cut(text: string): string {
  const limit = BRAIN_TELEMETRY_LIMITS.maxMessageBytes + 1;
  return typeof text === "string" && text.length > limit ? text.slice(0, limit) : String(text);
}
