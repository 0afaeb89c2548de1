import { trace, type Tracer } from "@opentelemetry/api";

/** The instrumentation scope of every span Brain makes. */
export const TRACER_NAME = "@aexhq/brain";

/** The global provider as the OpenTelemetry API holds it: a proxy that knows whether anything was registered. */
interface MaybeProxy {
  getDelegateTracer?(name: string): Tracer | undefined;
}

/** The tracer of the provider it came from: a provider registered later (after `trace.disable()`) gets a new one. */
let cached: { provider: MaybeProxy; tracer: Tracer } | undefined;

/**
 * Brain's tracer, or undefined while no tracer provider is registered: the
 * API's global provider is then a proxy without a delegate, and Brain makes no
 * span at all, so tracing costs nothing until an application (or Deno with
 * `OTEL_DENO=true`) installs one.
 */
export function brainTracer(): Tracer | undefined {
  const provider = trace.getTracerProvider() as MaybeProxy;
  if (typeof provider.getDelegateTracer === "function" && provider.getDelegateTracer(TRACER_NAME) === undefined) {
    return undefined;
  }
  if (cached?.provider !== provider) cached = { provider, tracer: trace.getTracer(TRACER_NAME) };
  return cached.tracer;
}
