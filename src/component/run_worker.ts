import { findNonJson } from "../outcome/json.ts";
import { fail } from "../outcome/outcome.ts";
import type { Dispatch } from "../contract/placement.ts";
import { parseInput } from "../run/host_tool.ts";
import { answerHostCall } from "./host_calls.ts";
import type { FromWorker, Invocation, ToWorker } from "./messages.ts";
import { createChannel, sendReply } from "./sync_channel.ts";
import type { Prepared } from "./transpile.ts";

/** One diagnostic a Component reported through `telemetry`; it never enters the journal. */
export interface TelemetryEntry {
  /** The placed Tool's name. */
  tool: string;
  /** Sequence of the call's `tool_call_started` record. */
  call: number;
  /** The guest's level, such as `info`. */
  level: string;
  /** The guest's message. */
  message: string;
}

const WORKER = new URL("./worker.ts", import.meta.url);

/** Spawns a Worker with `permissions` and resolves with its own permission check: undefined, or the mismatch. */
export function probeWorker(permissions: Deno.PermissionOptionsObject): Promise<string | undefined> {
  return new Promise((resolve) => {
    let worker: Worker;
    try {
      worker = new Worker(WORKER, { type: "module", name: "brain-component-probe", deno: { permissions } });
    } catch (error) {
      resolve(error instanceof Error ? error.message : String(error));
      return;
    }
    const done = (result: string | undefined) => {
      worker.terminate();
      resolve(result);
    };
    worker.onmessage = ({ data }: MessageEvent<FromWorker>) =>
      done(data.type === "unsupported" ? data.message : undefined);
    worker.onerror = (event) => {
      event.preventDefault();
      done(event.message);
    };
    worker.postMessage({ probe: true, permissions } satisfies ToWorker);
  });
}

/**
 * Runs one dispatched call in a fresh Worker with exactly `permissions`.
 * Input is validated first; the Worker is terminated when the call ends for
 * any reason (finish, deadline, cancellation) and when `run` returns.
 */
export async function runInWorker(
  prepared: Prepared,
  permissions: Deno.PermissionOptionsObject,
  dispatch: Dispatch,
  telemetry: ((entry: TelemetryEntry) => void) | undefined,
): Promise<void> {
  const { sink, invocation, tool } = dispatch;
  if (sink.signal.aborted) return;
  const parsed = await parseInput(tool, invocation, sink);
  if (!parsed || sink.signal.aborted) return;
  const nonJson = findNonJson(parsed.value);
  if (nonJson) {
    await sink.finish({ outcome: fail("invalid_input", `parsed input is not JSON: ${nonJson}`) }, "error");
    return;
  }
  const worker = new Worker(WORKER, {
    type: "module",
    name: `brain-component:${invocation.tool}`,
    deno: { permissions },
  });
  const ended = Promise.withResolvers<void>();
  const stop = () => {
    worker.terminate();
    ended.resolve();
  };
  sink.signal.addEventListener("abort", stop, { once: true });
  const channel = createChannel();
  // Host calls are answered one at a time: the guest is blocked until each reply.
  let replies: Promise<unknown> = Promise.resolve();
  const end = (error: string | undefined, code = "tool_error") => {
    replies = replies.then(async () => {
      if (!sink.signal.aborted) {
        const message = error ?? "the Component's run returned without calling finish";
        await sink.finish({ outcome: fail(code, message) }, "error").catch(() => {});
      }
      stop();
    });
  };
  worker.onmessage = ({ data }: MessageEvent<FromWorker>) => {
    switch (data.type) {
      case "call":
        replies = replies.then(async () => sendReply(channel, await answerHostCall(data, sink, tool.output)))
          .catch((error) => end(`the host call ${data.op} failed: ${(error as Error).message}`, "protocol_error"));
        break;
      case "telemetry":
        try {
          telemetry?.({ tool: invocation.tool, call: invocation.sequence, level: data.level, message: data.message });
        } catch {
          // Telemetry is best-effort: a failing listener never affects the call.
        }
        break;
      case "unsupported":
        end(data.message, "unsupported_runtime");
        break;
      case "done":
        end(data.error);
        break;
    }
  };
  worker.onerror = (event) => {
    event.preventDefault();
    end(`the Component's Worker failed: ${event.message}`);
  };
  worker.postMessage(
    {
      glue: prepared.glue,
      modules: prepared.modules,
      invocation: {
        tool: invocation.tool,
        input: JSON.stringify(parsed.value),
        options: JSON.stringify(dispatch.options),
        deadlineAtMs: invocation.deadline === undefined ? 0 : Math.max(1, Math.floor(invocation.deadline)),
      },
      workspace: dispatch.workspace,
      permissions,
      channel,
    } satisfies Invocation,
  );
  await ended.promise;
}
