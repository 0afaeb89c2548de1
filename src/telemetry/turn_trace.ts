import { context, trace } from "@opentelemetry/api";
import { brainTracer } from "./tracer.ts";
import { traceparentOf } from "./trace_context.ts";
import { endWith } from "./span_end.ts";

/**
 * Runs one Agentloop activation (a turn: its model calls and the Tool calls
 * they ask for) in a span `invoke_agent`, giving `turn` the span's traceparent
 * to parent them. Without a registered tracer provider it just runs `turn`.
 */
export function traceTurn<T>(
  sessionId: string,
  activation: string,
  turn: (traceparent: string | undefined) => Promise<T>,
): Promise<T> {
  const tracer = brainTracer();
  if (!tracer) return turn(undefined);
  const span = tracer.startSpan("invoke_agent", {
    attributes: {
      "brain.session.id": sessionId,
      "brain.activation": activation,
      "gen_ai.operation.name": "invoke_agent",
    },
  });
  const within = trace.setSpan(context.active(), span);
  return endWith(span, context.with(within, () => turn(traceparentOf(within))));
}
