import { type Span, SpanStatusCode } from "@opentelemetry/api";

/** Records `error` on `span`, marks it failed and ends it. */
export function failSpan(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  span.end();
}

/** Ends `span` when `work` settles (failed when it rejects) and returns `work` unchanged. */
export function endWith<T>(span: Span, work: Promise<T>, onValue?: (value: T) => void): Promise<T> {
  work.then((value) => {
    onValue?.(value);
    span.end();
  }, (error) => failSpan(span, error));
  return work;
}
