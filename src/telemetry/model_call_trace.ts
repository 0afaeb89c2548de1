import { context, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { ModelCallOrigin, ModelUsage } from "../model/types.ts";
import type { Outcome } from "../outcome/outcome.ts";
import { brainTracer } from "./tracer.ts";
import { contextOf } from "./trace_context.ts";

/** The span of one model call, from its request to its committed `model_call_finished`. */
export interface ModelCallTrace {
  /** Names the call by its `model_call_started` sequence, once committed. */
  started(sequence: number): void;
  /** Ends the span with the committed outcome and usage. */
  end(outcome: Outcome, usage?: ModelUsage): void;
}

/**
 * Starts a model call's span (`chat MODEL`, with the OpenTelemetry GenAI
 * attributes) under `parent`, the traceparent of the turn or Tool call making
 * it. Undefined while no tracer provider is registered.
 */
export function traceModelCall(
  call: { sessionId: string; provider: string; model: string; origin: ModelCallOrigin },
  parent: string | undefined,
): ModelCallTrace | undefined {
  const tracer = brainTracer();
  if (!tracer) return undefined;
  const span = tracer.startSpan(`chat ${call.model}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      "brain.session.id": call.sessionId,
      "brain.model_call.origin": call.origin.kind,
      "gen_ai.operation.name": "chat",
      "gen_ai.system": call.provider,
      "gen_ai.request.model": call.model,
    },
  }, contextOf(parent) ?? context.active());
  return {
    started(sequence) {
      span.setAttribute("brain.model_call.sequence", sequence);
    },
    end(outcome, usage) {
      span.setAttribute("brain.model_call.outcome", outcome.status);
      if (usage) {
        span.setAttributes({
          "gen_ai.usage.input_tokens": usage.inputTokens,
          "gen_ai.usage.output_tokens": usage.outputTokens,
        });
      }
      if (outcome.status === "error") span.setAttribute("error.type", outcome.error.code);
      if (outcome.status !== "ok") span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.status });
      span.end();
    },
  };
}
