import type { Invocation } from "../contract/call.ts";
import type { BrainResources, PlacedTool } from "../contract/placement.ts";
import { fail } from "../outcome/outcome.ts";
import { runHostTool } from "../run/host_tool.ts";
import { toolError } from "../run/tool_error.ts";
import type { CallState } from "./call_state.ts";
import type { SessionEnvironments } from "./environments.ts";
import type { ModelService } from "./model_service.ts";

/** What one dispatch needs from its session. */
export interface DispatchParts {
  placed: PlacedTool;
  invocation: Invocation;
  state: CallState;
  environments: SessionEnvironments;
  /** Real path of the binding's session workspace, when its grant has one. */
  workspace: string | undefined;
  /** The session's model execution service, started on first use. */
  modelService: () => ModelService;
  /** What the Brain shares with the implementations it runs (sandbox pools, caps). */
  resources: BrainResources | undefined;
}

/**
 * The one place that picks an executor: the binding's setup first (a failure ends the call
 * `setup_failed`, never retried), then the placed implementation, the Environment's own dispatch,
 * or the application function, once.
 */
export function dispatchCall(parts: DispatchParts): void {
  const { placed, state, environments } = parts;
  if (state.signal.aborted) return;
  if (!placed.env?.setup) return execute(parts);
  environments.prepare(placed.env.name, state.signal).then(
    () => execute(parts),
    (error) => {
      if (state.signal.aborted) return;
      state.finish({ outcome: fail("setup_failed", (error as Error).message) }, "error").catch(() => {});
    },
  );
}

function execute({ placed, invocation, state, environments, workspace, modelService, resources }: DispatchParts): void {
  if (state.signal.aborted) return;
  const failed = (error: unknown) => state.finish(toolError(error), "error");
  try {
    const { env, options, tool, implementation } = placed;
    if (implementation) {
      const modelAccess = env?.model ? modelService().grant(state) : undefined;
      implementation.execute({ invocation, tool, options, env, workspace, sink: state, modelAccess, resources });
    } else if (env?.dispatch) {
      env.dispatch({ invocation, tool, options, env, workspace, sink: state });
    } else {
      const control = environments.controlFor(env, state.signal, state.call, (bodies) => state.record(bodies));
      runHostTool(tool, options, invocation, state, { environments: control }).catch(failed);
    }
  } catch (error) {
    void failed(error);
  }
}
