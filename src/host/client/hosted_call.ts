import type { Invocation } from "../../contract/call.ts";
import type { PlacedTool } from "../../contract/placement.ts";
import { fail } from "../../outcome/outcome.ts";
import { runHostTool } from "../../run/host_tool.ts";
import type { SessionEnvironments } from "../../session/environments.ts";
import type { RemoteSink } from "./remote_sink.ts";

/** What one call dispatched to this client needs from its session handle. */
export interface HostedCall {
  placed: PlacedTool;
  invocation: Invocation;
  sink: RemoteSink;
  /** The session's Environments as this client runs them: its bindings, their setup, `ctx.environments`. */
  environments: SessionEnvironments;
  /** Real path of the binding's workspace on this client, when its grant has one. */
  workspace: string | undefined;
}

/**
 * Runs a call Brain dispatched to this client the way an embedded Brain runs it:
 * the binding's setup first (a failure ends the call `setup_failed`, never
 * retried), then the placement's implementation (a descriptor interpreted by its
 * Environment), the Environment's own dispatch (an Application tool extension),
 * or the application function with `ctx.environments` as its binding grants it.
 */
export function runHostedCall(call: HostedCall): void {
  const { placed, sink, environments } = call;
  if (sink.signal.aborted) return;
  if (!placed.env?.setup) return execute(call);
  environments.prepare(placed.env.name, sink.signal).then(
    () => execute(call),
    (error) => {
      if (sink.signal.aborted) return;
      sink.finish({ outcome: fail("setup_failed", (error as Error).message) }, "error").catch(() => {});
    },
  );
}

function execute({ placed, invocation, sink, environments, workspace }: HostedCall): void {
  if (sink.signal.aborted) return;
  const failed = (error: unknown) =>
    sink.finish({ outcome: fail("tool_error", error instanceof Error ? error.message : String(error)) }, "error")
      .catch(() => {});
  try {
    const { env, options, tool, implementation } = placed;
    if (implementation) implementation.execute({ invocation, tool, options, env, workspace, sink });
    else if (env?.dispatch) env.dispatch({ invocation, tool, options, env, workspace, sink });
    else {
      const control = environments.controlFor(env, sink.signal, invocation.sequence, (bodies) => sink.record(bodies));
      runHostTool(tool, options, invocation, sink, { environments: control }).catch(failed);
    }
  } catch (error) {
    failed(error);
  }
}
