import { type Context, context, isSpanContextValid, ROOT_CONTEXT, trace } from "@opentelemetry/api";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The W3C `traceparent` of the span active in `from` (the caller's context by
 * default), or undefined when there is none: what travels with a call over the
 * host connection so the other side's spans join the same trace.
 */
export function traceparentOf(from: Context = context.active()): string | undefined {
  const span = trace.getSpanContext(from);
  if (!span || !isSpanContextValid(span)) return undefined;
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 1) === 1 ? "01" : "00"}`;
}

/** A context whose parent is the remote span `traceparent` names; undefined for a missing or malformed one. */
export function contextOf(traceparent: string | undefined): Context | undefined {
  const parsed = traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (!parsed) return undefined;
  const span = { traceId: parsed[1], spanId: parsed[2], traceFlags: parseInt(parsed[3], 16), isRemote: true };
  return isSpanContextValid(span) ? trace.setSpanContext(ROOT_CONTEXT, span) : undefined;
}
