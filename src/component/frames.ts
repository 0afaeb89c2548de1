/**
 * Frames over a byte pipe: a little-endian u32 byte length, then that many
 * bytes: a u32 length and the UTF-8 JSON of the message, then the frame's
 * texts, each a u32 length (`ABSENT` for a missing one) and its UTF-8 bytes.
 * Texts carry strings that are JSON already (a call's input, an event's data,
 * an outcome) as they are, so they are neither escaped nor parsed twice.
 * Brain and a Component sandbox talk over the sandbox's stdin and stdout with them.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const CHUNK = 64 * 1024;
const NONE = Symbol("no whole frame");
/** The length that marks an absent text. */
const ABSENT = 0xffff_ffff;

/** A decoded frame. */
export interface Frame {
  /** The JSON message. */
  message: unknown;
  /** The texts that travelled beside it; `undefined` for an absent one. */
  texts: (string | undefined)[];
}

/** Writes a message's `json` and `texts` as one frame into `out` (large enough: see `frameBound`); returns its length. */
function writeFrame(out: Uint8Array, json: string, texts: readonly (string | undefined)[]): number {
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  let at = 8 + encoder.encodeInto(json, out.subarray(8)).written;
  view.setUint32(4, at - 8, true);
  for (const text of texts) {
    if (text === undefined) {
      view.setUint32(at, ABSENT, true);
      at += 4;
    } else {
      const { written } = encoder.encodeInto(text, out.subarray(at + 4));
      view.setUint32(at, written, true);
      at += 4 + written;
    }
  }
  view.setUint32(0, at - 4, true);
  return at;
}

/** Bytes enough for the frame of `json` and `texts`. */
function frameBound(json: string, texts: readonly (string | undefined)[]): number {
  let bound = 8 + json.length * 3;
  for (const text of texts) bound += 4 + (text?.length ?? 0) * 3;
  return bound;
}

/** Encodes one frame. */
export function encodeFrame(message: unknown, texts: readonly (string | undefined)[] = []): Uint8Array {
  const json = JSON.stringify(message);
  const out = new Uint8Array(frameBound(json, texts));
  return out.subarray(0, writeFrame(out, json, texts));
}

/** Decodes a frame's body; throws on lengths that do not add up. */
function readFrame(body: Uint8Array): Frame {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const fits = (at: number, length: number) => at + length <= body.byteLength;
  if (!fits(0, 4) || !fits(4, view.getUint32(0, true))) throw new Error("a frame's message overruns the frame");
  let at = 4 + view.getUint32(0, true);
  const message = JSON.parse(decoder.decode(body.subarray(4, at)));
  const texts: (string | undefined)[] = [];
  while (at < body.byteLength) {
    if (!fits(at, 4)) throw new Error("a frame's text overruns the frame");
    const length = view.getUint32(at, true);
    at += 4;
    if (length === ABSENT) {
      texts.push(undefined);
      continue;
    }
    if (!fits(at, length)) throw new Error("a frame's text overruns the frame");
    texts.push(decoder.decode(body.subarray(at, at + length)));
    at += length;
  }
  return { message, texts };
}

/**
 * The bytes received and not yet parsed, in one buffer that is reused: a pipe
 * read lands in its free end, and a frame is parsed where it lies.
 */
class Inbox {
  bytes: Uint8Array<ArrayBuffer> = new Uint8Array(CHUNK);
  #start = 0;
  #end = 0;

  /** The next whole frame, or `NONE` until more bytes arrive. */
  take(): Frame | typeof NONE {
    if (this.#end - this.#start < 4) return NONE;
    const length = new DataView(this.bytes.buffer, this.#start, 4).getUint32(0, true);
    const from = this.#start + 4;
    if (this.#end - from < length) return NONE;
    this.#start = from + length;
    const frame = readFrame(this.bytes.subarray(from, from + length));
    if (this.#start === this.#end) {
      this.#start = this.#end = 0;
      // A large frame does not keep its buffer.
      if (this.bytes.byteLength > 4 * CHUNK) this.bytes = new Uint8Array(CHUNK);
    }
    return frame;
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

  /** The next frame, or undefined when the stream ended first. Throws on a malformed frame. */
  async next(): Promise<Frame | undefined> {
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
  read(): Frame | undefined {
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
  write(message: unknown, texts: readonly (string | undefined)[] = []): void {
    const json = JSON.stringify(message);
    const bound = frameBound(json, texts);
    if (this.#out.byteLength < bound) this.#out = new Uint8Array(bound);
    let bytes = this.#out.subarray(0, writeFrame(this.#out, json, texts));
    while (bytes.byteLength > 0) bytes = bytes.subarray(Deno.stdout.writeSync(bytes));
  }
}
