import { BrainError } from "../outcome/errors.ts";

/**
 * Yields each newline-terminated line of a byte stream, without the newline; a
 * last unterminated line too. A line longer than `maxBytes` (UTF-8, before
 * decoding) throws `payload_too_large` as soon as it grows past the limit.
 */
export async function* lines(body: ReadableStream<Uint8Array>, maxBytes = Infinity): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let parts: Uint8Array[] = [];
  let size = 0;
  const take = (): string => {
    const line = new Uint8Array(size);
    let offset = 0;
    for (const part of parts) {
      line.set(part, offset);
      offset += part.length;
    }
    parts = [];
    size = 0;
    return decoder.decode(line);
  };
  const keep = (part: Uint8Array) => {
    size += part.length;
    if (size > maxBytes) {
      throw new BrainError("payload_too_large", `a line is longer than ${maxBytes} bytes`, { details: { maxBytes } });
    }
    if (part.length > 0) parts.push(part);
  };
  for await (const chunk of body) {
    let start = 0;
    for (let newline = chunk.indexOf(10); newline >= 0; newline = chunk.indexOf(10, start)) {
      keep(chunk.subarray(start, newline));
      yield take();
      start = newline + 1;
    }
    keep(chunk.slice(start));
  }
  if (size > 0) yield take();
}
