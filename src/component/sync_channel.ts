/**
 * A blocking request/reply channel between a Component's Worker and Brain's
 * thread. Component host imports are synchronous, but `emit` must return the
 * committed sequence, which Brain's thread learns asynchronously. The Worker
 * posts the request and sleeps in `Atomics.wait` on a SharedArrayBuffer until
 * Brain's thread writes the reply and wakes it.
 *
 * Layout: Int32 state (0 waiting, 1 replied), Int32 reply length, reply bytes (JSON).
 * The buffer grows when a reply does not fit.
 */

const HEADER = 8;
const INITIAL = 64 * 1024;
const MAX = 64 * 1024 * 1024;

/** The JSON a host call resolves to: the guest's `result<T, refusal>`. */
export type Reply =
  | { tag: "ok"; val?: unknown }
  | { tag: "err"; val: { code: string; message: string } };

/** A new channel buffer, created by Brain's thread and sent to the Worker. */
export function createChannel(): SharedArrayBuffer {
  return new SharedArrayBuffer(INITIAL, { maxByteLength: MAX });
}

/** Brain's thread: writes `reply` and wakes the Worker waiting on `buffer`. */
export function sendReply(buffer: SharedArrayBuffer, reply: Reply): void {
  let bytes = new TextEncoder().encode(JSON.stringify(reply));
  if (HEADER + bytes.byteLength > MAX) {
    bytes = new TextEncoder().encode(JSON.stringify(refusal("protocol_error", "the host reply is too large")));
  }
  if (HEADER + bytes.byteLength > buffer.byteLength) buffer.grow(HEADER + bytes.byteLength);
  new Uint8Array(buffer, HEADER, bytes.byteLength).set(bytes);
  const header = new Int32Array(buffer, 0, 2);
  Atomics.store(header, 1, bytes.byteLength);
  Atomics.store(header, 0, 1);
  Atomics.notify(header, 0);
}

/** The Worker: posts `request` and blocks until Brain's thread replies. */
export function blockingCall<R>(buffer: SharedArrayBuffer, post: (request: R) => void, request: R): Reply {
  const header = new Int32Array(buffer, 0, 2);
  Atomics.store(header, 0, 0);
  post(request);
  Atomics.wait(header, 0, 0);
  const length = Atomics.load(header, 1);
  // TextDecoder refuses shared memory: copy the reply out first.
  const text = new TextDecoder().decode(new Uint8Array(buffer, HEADER, length).slice());
  return JSON.parse(text) as Reply;
}

/** A refusal reply with a stable code. */
export function refusal(code: string, message: string): Reply {
  return { tag: "err", val: { code, message } };
}
