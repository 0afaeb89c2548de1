import { BrainError } from "../outcome/errors.ts";

/** The most bytes Brain reads of one HTTP body it did not write itself, unless told otherwise: 8 MiB. */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

/**
 * Reads a request or response body as UTF-8 text, at most `maxBytes` of it:
 * past that it stops reading, cancels the body and throws `payload_too_large`
 * naming `what`. When `signal` aborts first, it cancels the body and throws the signal's reason.
 */
export async function readBounded(
  body: ReadableStream<Uint8Array> | null,
  what: string,
  maxBytes: number = MAX_BODY_BYTES,
  signal?: AbortSignal,
): Promise<string> {
  const tooLarge = () =>
    new BrainError("payload_too_large", `${what} is longer than ${maxBytes} bytes`, { details: { maxBytes } });
  return new TextDecoder().decode(await readBoundedBytes(body, maxBytes, tooLarge, signal));
}

/**
 * Reads a body's bytes, at most `maxBytes` of them: past that it stops
 * reading, cancels the body and throws what `tooLarge` makes. When `signal`
 * aborts first (a body that never ends), it cancels the body and throws the signal's reason.
 */
export async function readBoundedBytes(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
  tooLarge: () => BrainError,
  signal?: AbortSignal,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0);
  signal?.throwIfAborted();
  const reader = body.getReader();
  const stop = () => void reader.cancel().catch(() => {});
  signal?.addEventListener("abort", stop, { once: true });
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      // A cancelled read ends like the body: what came is not all of it.
      signal?.throwIfAborted();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      parts.push(value);
    }
  } finally {
    signal?.removeEventListener("abort", stop);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return bytes;
}

/**
 * `body` as a stream that errors with `payload_too_large` naming `what` (and
 * cancels `body`) once more than `maxBytes` bytes have passed through it.
 */
export function boundedBody(
  body: ReadableStream<Uint8Array>,
  what: string,
  maxBytes: number,
): ReadableStream<Uint8Array> {
  let size = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        size += chunk.byteLength;
        if (size <= maxBytes) return controller.enqueue(chunk);
        controller.error(
          new BrainError("payload_too_large", `${what} is longer than ${maxBytes} bytes`, { details: { maxBytes } }),
        );
      },
    }),
  );
}
