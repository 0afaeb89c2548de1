import { type Context, context, SpanKind, trace } from "@opentelemetry/api";
import { brainTracer } from "./tracer.ts";
import { contextOf } from "./trace_context.ts";

/** The span of a Tool call running in a host process, under the caller's span on the Brain server. */
export interface HostedRunTrace {
  /** The context with the run's span active: the Tool's own spans join the trace under it. */
  readonly context: Context;
  /** Ends the span; later calls do nothing. */
  end(): void;
}

/**
 * Starts the span `execute_tool TOOL` of a call a Brain server dispatched to
 * this host, as a child of the server's call span that `traceparent` names, so
 * a remote Tool's spans join the caller's trace. It ends at `end()` or when
 * `signal` aborts. Undefined while no tracer provider is registered.
 */
export function traceHostedRun(
  call: { sessionId: string; sequence: number; tool: string },
  traceparent: string | undefined,
  signal: AbortSignal,
): HostedRunTrace | undefined {
  const tracer = brainTracer();
  if (!tracer) return undefined;
  const span = tracer.startSpan(`execute_tool ${call.tool}`, {
    kind: SpanKind.SERVER,
    attributes: {
      "brain.session.id": call.sessionId,
      "brain.call.sequence": call.sequence,
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": call.tool,
      "brain.environment.kind": "host",
    },
  }, contextOf(traceparent) ?? context.active());
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    span.end();
  };
  signal.addEventListener("abort", end, { once: true });
  return { context: trace.setSpan(context.active(), span), end };
}
