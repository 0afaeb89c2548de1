/**
 * Length-prefixed JSON frames over a byte pipe: a little-endian u32 byte
 * length, then that many bytes of UTF-8 JSON. Brain and a Component sandbox
 * talk over the sandbox's stdin and stdout with them.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const CHUNK = 64 * 1024;
const NONE = Symbol("no whole frame");

/** Encodes one frame. */
export function encodeFrame(message: unknown): Uint8Array {
  const body = encoder.encode(JSON.stringify(message));
  const frame = new Uint8Array(4 + body.byteLength);
  new DataView(frame.buffer).setUint32(0, body.byteLength, true);
  frame.set(body, 4);
  return frame;
}

/**
 * The bytes received and not yet parsed, in one buffer that is reused: a pipe
 * read lands in its free end, and a frame is parsed where it lies.
 */
class Inbox {
  bytes: Uint8Array<ArrayBuffer> = new Uint8Array(CHUNK);
  #start = 0;
  #end = 0;

  /** The next whole frame's value, or `NONE` until more bytes arrive. */
  take(): unknown {
    if (this.#end - this.#start < 4) return NONE;
    const length = new DataView(this.bytes.buffer, this.#start, 4).getUint32(0, true);
    const from = this.#start + 4;
    if (this.#end - from < length) return NONE;
    this.#start = from + length;
    const value = JSON.parse(decoder.decode(this.bytes.subarray(from, from + length)));
    if (this.#start === this.#end) {
      this.#start = this.#end = 0;
      // A large frame does not keep its buffer.
      if (this.bytes.byteLength > 4 * CHUNK) this.bytes = new Uint8Array(CHUNK);
    }
    return value;
  }

  /** Where the next read goes: room for a chunk, or for the rest of the frame being received. */
  free(): Uint8Array {
    const unread = this.#end - this.#start;
    const frame = unread >= 4 ? 4 + new DataView(this.bytes.buffer, this.#start, 4).getUint32(0, true) : 0;
    const room = Math.max(CHUNK, frame - unread);
    if (this.bytes.byteLength - this.#end < room) {
      if (unread + room > this.bytes.byteLength) {
        const larger = new Uint8Array(unread + room);
        larger.set(this.bytes.subarray(this.#start, this.#end));
        this.bytes = larger;
      } else {
        this.bytes.copyWithin(0, this.#start, this.#end);
      }
      this.#start = 0;
      this.#end = unread;
    }
    return this.bytes.subarray(this.#end);
  }

  /** Records `count` bytes read into {@linkcode Inbox.free}'s view, now at `bytes`. */
  received(bytes: Uint8Array<ArrayBuffer>, count: number): void {
    this.bytes = bytes;
    this.#end += count;
  }
}

/** Reads frames from a byte stream, one at a time; undefined once the stream ends. */
export class FrameReader {
  #reader: ReadableStreamBYOBReader;
  #inbox = new Inbox();

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.getReader({ mode: "byob" });
  }

  /** The next frame's JSON value, or undefined when the stream ended first. */
  async next(): Promise<unknown> {
    for (;;) {
      const frame = this.#inbox.take();
      if (frame !== NONE) return frame;
      const { value, done } = await this.#reader.read(this.#inbox.free());
      if (done || value === undefined) return undefined;
      this.#inbox.received(new Uint8Array(value.buffer as ArrayBuffer), value.byteLength);
    }
  }

  /** Stops reading. */
  cancel(): Promise<void> {
    return this.#reader.cancel().catch(() => {});
  }
}

/** Blocking frame I/O over this process's stdin and stdout, for the sandbox side. */
export class SyncFrames {
  #inbox = new Inbox();
  #out = new Uint8Array(CHUNK);

  /** Blocks until the next frame arrives; undefined when stdin closed. */
  read(): unknown {
    for (;;) {
      const frame = this.#inbox.take();
      if (frame !== NONE) return frame;
      const free = this.#inbox.free();
      const n = Deno.stdin.readSync(free);
      if (n === null) return undefined;
      this.#inbox.received(this.#inbox.bytes, n);
    }
  }

  /** Writes one frame completely, encoded into a buffer kept for the next. */
  write(message: unknown): void {
    const json = JSON.stringify(message);
    if (this.#out.byteLength < 4 + json.length * 3) this.#out = new Uint8Array(4 + json.length * 3);
    const { written } = encoder.encodeInto(json, this.#out.subarray(4));
    new DataView(this.#out.buffer).setUint32(0, written, true);
    let bytes = this.#out.subarray(0, 4 + written);
    while (bytes.byteLength > 0) bytes = bytes.subarray(Deno.stdout.writeSync(bytes));
  }
}
