import { type Span, SpanStatusCode } from "@opentelemetry/api";
import { isInstance } from "../outcome/known_keys.ts";
import { errorName, errorText } from "../util/error_text.ts";

/** Records `error` on `span`, marks it failed and ends it. */
export function failSpan(span: Span, error: unknown): void {
  // errorText: what a Tool threw may be a value whose message or prototype cannot even be read.
  const message = errorText(error);
  span.recordException(isInstance(error, Error) ? { name: errorName(error), message } : message);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
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
