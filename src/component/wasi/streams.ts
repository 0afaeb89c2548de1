/**
 * `wasi:io` inside a sandbox: errors, pollables and streams. Every operation is
 * synchronous; a pollable with a deadline blocks the sandbox's thread until it.
 */

/** The value a WASI import throws to return `err(payload)` to the guest. */
export function wasiError(payload: unknown): { payload: unknown } {
  return { payload };
}

/** `wasi:io/error.error`, with the HTTP or socket error code behind it when there is one. */
export class IoError {
  #message: string;
  /** What `http-error-code` or `network-error-code` answers for it. */
  readonly code: unknown;
  constructor(message: string, code?: unknown) {
    this.#message = message;
    this.code = code;
  }
  toDebugString(): string {
    return this.#message;
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Something outside the sandbox's thread that pollables can wait on: the net Worker. */
export interface Waiter {
  /** True when the item `key` is ready. */
  ready(key: number): boolean;
  /** Blocks until one of `keys` is ready, or `timeoutMs` passed (negative: no limit). */
  wait(keys: number[], timeoutMs: number): void;
}

/**
 * `wasi:io/poll.pollable`: ready at `readyAt` (a `performance.now()` time), or
 * at once; or, given a `waiter`, when the waiter's item `key` is ready.
 */
export class Pollable {
  #readyAt: number;
  #on: { waiter: Waiter; key: number } | undefined;
  constructor(readyAt = 0, on?: { waiter: Waiter; key: number }) {
    this.#readyAt = on ? Infinity : readyAt;
    this.#on = on;
  }
  ready(): boolean {
    return this.#on ? this.#on.waiter.ready(this.#on.key) : performance.now() >= this.#readyAt;
  }
  block(): void {
    poll([this]);
  }
  /** When it is ready, if that is a time. */
  get readyAt(): number {
    return this.#readyAt;
  }
  /** What it waits on, if that is not a time. */
  get on(): { waiter: Waiter; key: number } | undefined {
    return this.#on;
  }
}

/** `wasi:io/poll.poll`: the indices of the ready pollables, blocking until at least one is. */
export function poll(pollables: Pollable[]): Uint32Array {
  if (pollables.length === 0) throw new Error("poll needs at least one pollable");
  for (;;) {
    const ready = pollables.flatMap((pollable, index) => (pollable.ready() ? [index] : []));
    if (ready.length > 0) return Uint32Array.from(ready);
    const soonest = Math.min(...pollables.map((pollable) => pollable.readyAt));
    const wait = soonest === Infinity ? -1 : Math.max(0, soonest - performance.now());
    const waited = pollables.flatMap((pollable) => (pollable.on ? [pollable.on] : []));
    if (waited.length > 0) waited[0].waiter.wait(waited.map((on) => on.key), wait);
    else Atomics.wait(sleeper, 0, 0, wait);
  }
}

const CLOSED = { tag: "closed" };

/**
 * `wasi:io/streams.input-stream` over a function that reads up to `length`
 * bytes (none when nothing is there yet), or undefined at the end; `subscribe`
 * says when there is something to read (at once when omitted); `close` runs
 * when the guest drops the stream.
 */
export class InputStream {
  #read: (length: number) => Uint8Array | undefined;
  #subscribe: () => Pollable;
  #close: (() => void) | undefined;
  constructor(
    read: (length: number) => Uint8Array | undefined,
    subscribe = () => new Pollable(),
    close?: () => void,
  ) {
    this.#read = read;
    this.#subscribe = subscribe;
    this.#close = close;
  }
  [Symbol.dispose](): void {
    this.#close?.();
  }
  read(length: bigint): Uint8Array {
    const bytes = this.#read(Number(length));
    if (bytes === undefined) throw wasiError(CLOSED);
    return bytes;
  }
  blockingRead(length: bigint): Uint8Array {
    for (;;) {
      const bytes = this.read(length);
      const more = this.subscribe();
      // Only a stream that waits on something outside can have more later; any other has said all it has.
      if (bytes.byteLength > 0 || length === 0n || !more.on) return bytes;
      more.block();
    }
  }
  skip(length: bigint): bigint {
    return BigInt(this.read(length).byteLength);
  }
  blockingSkip(length: bigint): bigint {
    return this.skip(length);
  }
  subscribe(): Pollable {
    return this.#subscribe();
  }
}

/** How an output stream reports room and waits to drain; by default it always has room. */
export interface OutputWaits {
  /** How many bytes may be written now; throws the stream's error when it failed. */
  room(): bigint;
  /** Ready when the stream has room again. */
  subscribe(): Pollable;
}

const ALWAYS_ROOM: OutputWaits = { room: () => 1_048_576n, subscribe: () => new Pollable() };

/**
 * `wasi:io/streams.output-stream` over a function that writes (or queues) all
 * of `bytes`; `close` runs when the guest drops the stream.
 */
export class OutputStream {
  #write: (bytes: Uint8Array) => void;
  #waits: OutputWaits;
  #close: (() => void) | undefined;
  constructor(write: (bytes: Uint8Array) => void, waits = ALWAYS_ROOM, close?: () => void) {
    this.#write = write;
    this.#waits = waits;
    this.#close = close;
  }
  [Symbol.dispose](): void {
    this.#close?.();
  }
  checkWrite(): bigint {
    return this.#waits.room();
  }
  write(contents: Uint8Array): void {
    try {
      this.#write(contents);
    } catch (error) {
      if ((error as { payload?: unknown })?.payload !== undefined) throw error;
      throw wasiError({ tag: "last-operation-failed", val: new IoError(String(error)) });
    }
  }
  blockingWriteAndFlush(contents: Uint8Array): void {
    this.write(contents);
    this.blockingFlush();
  }
  flush(): void {}
  blockingFlush(): void {
    // Ready means drained (or failed: checkWrite then throws the failure).
    this.subscribe().block();
    this.checkWrite();
  }
  writeZeroes(length: bigint): void {
    this.write(new Uint8Array(Number(length)));
  }
  blockingWriteZeroesAndFlush(length: bigint): void {
    this.writeZeroes(length);
    this.blockingFlush();
  }
  splice(source: InputStream, length: bigint): bigint {
    const bytes = source.read(length);
    this.write(bytes);
    return BigInt(bytes.byteLength);
  }
  blockingSplice(source: InputStream, length: bigint): bigint {
    const bytes = source.blockingRead(length);
    this.blockingWriteAndFlush(bytes);
    return BigInt(bytes.byteLength);
  }
  subscribe(): Pollable {
    return this.#waits.subscribe();
  }
}
