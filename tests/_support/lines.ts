/** The text lines of a byte stream, without their line endings. */
export async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffered = "";
  for await (const text of stream.pipeThrough(new TextDecoderStream())) {
    buffered += text;
    const parts = buffered.split("\n");
    buffered = parts.pop()!;
    yield* parts;
  }
  if (buffered) yield buffered;
}
