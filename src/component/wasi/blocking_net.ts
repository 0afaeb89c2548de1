import { receiveMessageOnPort } from "node:worker_threads";
import { netWorkerMain } from "./net_worker.ts";

/** How many requests, connections, lookups and bodies a call may hold open at once. */
const MAX_OPEN = 256;

/**
 * A sandbox's network, as blocking calls: each call posts to the net Worker
 * and waits on a shared flag for its answer. The Worker starts on first use,
 * so a guest that never touches the network costs nothing. Its source is a
 * blob, so the sandbox needs no read access to Brain's own files.
 */
export class BlockingNet {
  #port: MessagePort | undefined;
  #signal = new Int32Array(new SharedArrayBuffer(4));
  #number = 0;
  #worker: Worker | undefined;
  #open = new Set<number>();

  /** Sends `{ op, ...args }` and returns the Worker's answer. */
  call<T = Record<string, unknown>>(op: string, args: Record<string, unknown> = {}): T {
    const port = this.#start();
    // The Worker stores each answer's number after posting it: a late wake-up from an earlier answer is told apart.
    const number = this.#number = (this.#number + 1) | 0;
    port.postMessage({ op, number, ...args });
    for (let seen = Atomics.load(this.#signal, 0); seen !== number; seen = Atomics.load(this.#signal, 0)) {
      Atomics.wait(this.#signal, 0, seen);
    }
    return receiveMessageOnPort(port as never)?.message as T;
  }

  /** True when the call holds as many open things as it may: a new request or connection is refused. */
  get full(): boolean {
    return this.#open.size >= MAX_OPEN;
  }

  /** Remembers `key` as open until {@linkcode BlockingNet.close} drops it. */
  track(key: number | undefined): void {
    if (key !== undefined) this.#open.add(key);
  }

  /** True when the item `key` is ready: settled, readable, or drained. */
  ready(key: number): boolean {
    return this.call<boolean[]>("ready", { keys: [key] })[0];
  }

  /** Blocks until one of `keys` is ready, or `timeoutMs` passed (negative: no limit). */
  wait(keys: number[], timeoutMs: number): void {
    this.call("wait", { keys, timeoutMs: timeoutMs < 0 ? -1 : Math.ceil(timeoutMs) });
  }

  /** Closes and forgets `keys`. */
  drop(...keys: (number | undefined)[]): void {
    const known = keys.filter((key): key is number => key !== undefined && this.#open.delete(key));
    if (known.length > 0 && this.#port) this.call("drop", { keys: known });
  }

  /** Closes everything still open: a call's requests and connections end with it. */
  close(): void {
    this.drop(...this.#open);
  }

  #start(): MessagePort {
    if (this.#port) return this.#port;
    const source = URL.createObjectURL(new Blob([`(${netWorkerMain})()`], { type: "text/javascript" }));
    this.#worker = new Worker(source, { type: "module" });
    const channel = new MessageChannel();
    this.#worker.postMessage({ port: channel.port2, signal: this.#signal }, [channel.port2]);
    this.#port = channel.port1;
    return this.#port;
  }
}
