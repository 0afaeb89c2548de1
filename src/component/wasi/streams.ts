/**
 * `wasi:io` inside a sandbox: errors, pollables and streams. Every operation is
 * synchronous; a pollable with a deadline blocks the sandbox's thread until it.
 */

/** The value a WASI import throws to return `err(payload)` to the guest. */
export function wasiError(payload: unknown): { payload: unknown } {
  return { payload };
}

/** `wasi:io/error.error`. */
export class IoError {
  #message: string;
  constructor(message: string) {
    this.#message = message;
  }
  toDebugString(): string {
    return this.#message;
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** `wasi:io/poll.pollable`: ready at `readyAt` (a `performance.now()` time), or at once. */
export class Pollable {
  #readyAt: number;
  constructor(readyAt = 0) {
    this.#readyAt = readyAt;
  }
  ready(): boolean {
    return performance.now() >= this.#readyAt;
  }
  block(): void {
    const wait = this.#readyAt - performance.now();
    if (wait > 0) Atomics.wait(sleeper, 0, 0, wait);
  }
  /** When it is ready. */
  get readyAt(): number {
    return this.#readyAt;
  }
}

/** `wasi:io/poll.poll`: the indices of the ready pollables, blocking until at least one is. */
export function poll(pollables: Pollable[]): Uint32Array {
  if (pollables.length === 0) throw new Error("poll needs at least one pollable");
  const first = pollables.reduce((soonest, pollable) => (pollable.readyAt < soonest.readyAt ? pollable : soonest));
  first.block();
  return Uint32Array.from(pollables.flatMap((pollable, index) => (pollable.ready() ? [index] : [])));
}

const CLOSED = { tag: "closed" };

/** `wasi:io/streams.input-stream` over a function that reads up to `length` bytes, or undefined at the end. */
export class InputStream {
  #read: (length: number) => Uint8Array | undefined;
  constructor(read: (length: number) => Uint8Array | undefined) {
    this.#read = read;
  }
  read(length: bigint): Uint8Array {
    const bytes = this.#read(Number(length));
    if (bytes === undefined) throw wasiError(CLOSED);
    return bytes;
  }
  blockingRead(length: bigint): Uint8Array {
    return this.read(length);
  }
  skip(length: bigint): bigint {
    return BigInt(this.read(length).byteLength);
  }
  blockingSkip(length: bigint): bigint {
    return this.skip(length);
  }
  subscribe(): Pollable {
    return new Pollable();
  }
}

/** `wasi:io/streams.output-stream` over a function that writes all of `bytes`. */
export class OutputStream {
  #write: (bytes: Uint8Array) => void;
  constructor(write: (bytes: Uint8Array) => void) {
    this.#write = write;
  }
  checkWrite(): bigint {
    return 1_048_576n;
  }
  write(contents: Uint8Array): void {
    try {
      this.#write(contents);
    } catch (error) {
      throw wasiError({ tag: "last-operation-failed", val: new IoError(String(error)) });
    }
  }
  blockingWriteAndFlush(contents: Uint8Array): void {
    this.write(contents);
  }
  flush(): void {}
  blockingFlush(): void {}
  writeZeroes(length: bigint): void {
    this.write(new Uint8Array(Number(length)));
  }
  blockingWriteZeroesAndFlush(length: bigint): void {
    this.writeZeroes(length);
  }
  splice(source: InputStream, length: bigint): bigint {
    const bytes = source.read(length);
    this.write(bytes);
    return BigInt(bytes.byteLength);
  }
  blockingSplice(source: InputStream, length: bigint): bigint {
    return this.splice(source, length);
  }
  subscribe(): Pollable {
    return new Pollable();
  }
}
