import type { CallSink, Invocation } from "../contract/call.ts";
import type { BrainResources, PlacedTool } from "../contract/placement.ts";
import { fail } from "../outcome/outcome.ts";
import { runHostTool } from "../run/host_tool.ts";
import { toolError } from "../run/tool_error.ts";
import type { SessionEnvironments } from "./environments.ts";
import type { ModelService } from "./model_service.ts";

/**
 * What one dispatch needs from its session, wherever the call runs: `sink` is the
 * call's `CallState` in an embedded Brain, or the host connection's sink in a
 * remote client, whose reports Brain commits before it acknowledges them.
 */
export interface DispatchParts {
  placed: PlacedTool;
  invocation: Invocation;
  sink: CallSink;
  environments: SessionEnvironments;
  /** Real path of the binding's session workspace, when its grant has one. */
  workspace: string | undefined;
  /** The session's model execution service, started on first use. */
  modelService: () => ModelService;
  /** What the Brain shares with the implementations it runs (sandbox pools, caps). */
  resources: BrainResources | undefined;
}

/**
 * The one place that orders a dispatch: the binding's setup first (a failure ends the call
 * `setup_failed`, never retried), then the placed implementation, the Environment's own dispatch,
 * or the application function, once.
 */
export function dispatchCall(parts: DispatchParts): void {
  if (parts.sink.signal.aborted) return;
  if (!parts.placed.env?.setup) execute(parts);
  else afterSetup(parts, parts.placed.env.name);
}

/** Executes once the binding's setup ran: a separate function, so a call without setup allocates no closure. */
function afterSetup(parts: DispatchParts, envName: string): void {
  const { sink, environments } = parts;
  environments.prepare(envName, sink.signal).then(
    () => execute(parts),
    (error) => {
      if (sink.signal.aborted) return;
      sink.finish({ outcome: fail("setup_failed", (error as Error).message) }, "error").catch(() => {});
    },
  );
}

function execute({ placed, invocation, sink, environments, workspace, modelService, resources }: DispatchParts): void {
  if (sink.signal.aborted) return;
  try {
    const { env, options, tool, implementation } = placed;
    if (implementation) {
      const modelAccess = env?.model ? modelService().grant(sink) : undefined;
      failOnRejection(
        sink,
        implementation.execute({ invocation, tool, options, env, workspace, sink, modelAccess, resources }),
      );
    } else if (env?.dispatch) {
      failOnRejection(sink, env.dispatch({ invocation, tool, options, env, workspace, sink }));
    } else {
      const control = environments.controlFor(env, sink.signal, invocation.sequence, sink);
      runHostTool(tool, options, invocation, sink, { environments: control }).catch((error) =>
        finishFailed(sink, error)
      );
    }
  } catch (error) {
    finishFailed(sink, error);
  }
}

/**
 * Executors return nothing, but one written as an async function returns a promise: its rejection
 * fails the call like a throw, instead of going unhandled (which would end the process).
 */
function failOnRejection(sink: CallSink, returned: unknown): void {
  if (returned instanceof Promise) returned.catch((error) => finishFailed(sink, error));
}

/** Ends the call `tool_error`; a finish that cannot be reported (a lost host connection) is settled by whoever ends the call. */
function finishFailed(sink: CallSink, error: unknown): void {
  sink.finish(toolError(error), "error").catch(() => {});
}
