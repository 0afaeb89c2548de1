import { type Context, context } from "@opentelemetry/api";

/** Runs `work` with `trace`'s context active, so spans it makes are children; just runs it without one. */
export function within<T>(trace: { readonly context: Context } | undefined, work: () => T): T {
  return trace ? context.with(trace.context, work) : work();
}
