import { type Context, context, SpanKind, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import type { TerminalCause } from "../journal/records.ts";
import type { Outcome } from "../outcome/outcome.ts";
import { brainTracer } from "./tracer.ts";
import { contextOf, traceparentOf } from "./trace_context.ts";
import { endWith, failSpan } from "./span_end.ts";

/** Where a call's committed intent landed: a Tool call span starts from it. */
export interface TracedIntent {
  /** Sequence of the call's `tool_call_started` record. */
  readonly sequence: number;
  /** When the intent committed, in ms since the epoch: the span's start. */
  readonly at: number;
}

/** The span of one Tool call, from its committed intent to its terminal record. */
export interface ToolCallTrace {
  /** The context with the call's span active: its emits, model calls and in-process Tool run under it. */
  readonly context: Context;
  /** The call span's W3C `traceparent`, sent with the call to a remote host. */
  readonly traceparent: string | undefined;
  /** Traces one `ctx.emit` until `committed` settles, and returns it. */
  emit(event: string, committed: Promise<number>): Promise<number>;
  /** Ends the span at the terminal record. */
  end(end: { sequence: number; cause: TerminalCause; outcome: Outcome }): void;
  /** Ends the span when the terminal record could not be committed. */
  fail(error: unknown): void;
}

/**
 * Starts the span of a Tool call whose intent committed, as a child of the
 * `parent` traceparent (a remote caller's) or else of the active context.
 * Undefined, at no cost, while no tracer provider is registered.
 */
export function traceToolCall(
  sessionId: string,
  tool: string,
  intent: TracedIntent,
  environment: string,
  parent?: string,
): ToolCallTrace | undefined {
  const tracer = brainTracer();
  // The span's closures live in their own function: without a tracer, a call allocates nothing here.
  return tracer &&
    startTrace(tracer, { sessionId, tool, sequence: intent.sequence, at: intent.at }, environment, parent);
}

/** The committed intent a Tool call span starts from. */
interface TracedCall extends TracedIntent {
  /** The owning session. */
  readonly sessionId: string;
  /** The Tool's name. */
  readonly tool: string;
}

function startTrace(tracer: Tracer, call: TracedCall, environment: string, parent: string | undefined): ToolCallTrace {
  const attributes = {
    "brain.session.id": call.sessionId,
    "brain.call.sequence": call.sequence,
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": call.tool,
    "brain.environment.kind": environment,
  };
  const span = tracer.startSpan(
    `execute_tool ${call.tool}`,
    { kind: SpanKind.INTERNAL, startTime: call.at, attributes },
    contextOf(parent) ?? context.active(),
  );
  const within = trace.setSpan(context.active(), span);
  return {
    context: within,
    traceparent: traceparentOf(within),
    emit(event, committed) {
      const emitted = tracer.startSpan(`emit ${event}`, {
        attributes: { "brain.session.id": call.sessionId, "brain.call.sequence": call.sequence, "brain.event": event },
      }, within);
      return endWith(emitted, committed, (sequence) => emitted.setAttribute("brain.record.sequence", sequence));
    },
    end({ sequence, cause, outcome }) {
      const label = cause === "timeout" || cause === "cancelled" || cause === "unknown" ? cause : outcome.status;
      span.setAttributes({
        "brain.call.cause": cause,
        "brain.call.outcome": label,
        "brain.call.terminal_sequence": sequence,
      });
      if (outcome.status === "error") span.setAttribute("error.type", outcome.error.code);
      if (label !== "ok") span.setStatus({ code: SpanStatusCode.ERROR, message: label });
      span.end();
    },
    fail(error) {
      failSpan(span, error);
    },
  };
}
