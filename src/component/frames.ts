/**
 * Length-prefixed JSON frames over a byte pipe: a little-endian u32 byte
 * length, then that many bytes of UTF-8 JSON. Brain and a Component sandbox
 * talk over the sandbox's stdin and stdout with them.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Encodes one frame. */
export function encodeFrame(message: unknown): Uint8Array {
  const body = encoder.encode(JSON.stringify(message));
  const frame = new Uint8Array(4 + body.byteLength);
  new DataView(frame.buffer).setUint32(0, body.byteLength, true);
  frame.set(body, 4);
  return frame;
}

/** Reads frames from a byte stream, one at a time; undefined once the stream ends. */
export class FrameReader {
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #buffer: Uint8Array = new Uint8Array(0);

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.getReader();
  }

  /** The next frame's JSON value, or undefined when the stream ended first. */
  async next(): Promise<unknown> {
    for (;;) {
      const frame = takeFrame(this.#buffer);
      if (frame) {
        this.#buffer = frame.rest;
        return frame.value;
      }
      const { value, done } = await this.#reader.read();
      if (done) return undefined;
      this.#buffer = concat(this.#buffer, value);
    }
  }

  /** Stops reading. */
  cancel(): Promise<void> {
    return this.#reader.cancel().catch(() => {});
  }
}

/** Blocking frame I/O over this process's stdin and stdout, for the sandbox side. */
export class SyncFrames {
  #buffer: Uint8Array = new Uint8Array(0);
  #chunk = new Uint8Array(64 * 1024);

  /** Blocks until the next frame arrives; undefined when stdin closed. */
  read(): unknown {
    for (;;) {
      const frame = takeFrame(this.#buffer);
      if (frame) {
        this.#buffer = frame.rest;
        return frame.value;
      }
      const n = Deno.stdin.readSync(this.#chunk);
      if (n === null) return undefined;
      this.#buffer = concat(this.#buffer, this.#chunk.subarray(0, n));
    }
  }

  /** Writes one frame completely. */
  write(message: unknown): void {
    let bytes = encodeFrame(message);
    while (bytes.byteLength > 0) bytes = bytes.subarray(Deno.stdout.writeSync(bytes));
  }
}

function takeFrame(buffer: Uint8Array): { value: unknown; rest: Uint8Array } | undefined {
  if (buffer.byteLength < 4) return undefined;
  const length = new DataView(buffer.buffer, buffer.byteOffset, 4).getUint32(0, true);
  if (buffer.byteLength < 4 + length) return undefined;
  const value = JSON.parse(decoder.decode(buffer.subarray(4, 4 + length)));
  return { value, rest: buffer.subarray(4 + length) };
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.byteLength === 0) return b.slice();
  const joined = new Uint8Array(a.byteLength + b.byteLength);
  joined.set(a);
  joined.set(b, a.byteLength);
  return joined;
}
