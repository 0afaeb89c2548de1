import net from "node:net";
import { setImmediate } from "node:timers";
import { BrainError } from "../outcome/errors.ts";

/** What postgres.js tells a socket factory of where its database is (host and port lists, or a Unix socket path). */
export interface SocketTarget {
  host: string[];
  port: number[];
  path?: string | false;
}

/**
 * The sockets of one journal's connections, opened as postgres.js opens its
 * own (taking the hosts in turn) until {@linkcode JournalSockets.close}; from
 * then on opening one fails. postgres.js 3.4.9 does not cancel a reconnection
 * it timed before `end()`: that connection opened afterwards, idle and never
 * ended, and kept the process from exiting.
 */
export class JournalSockets {
  #closed = false;
  #opened = 0;
  #answerMs: number;

  /**
   * `answerMs`: how long a socket may stay silent after something was written
   * on it before it is destroyed. Every message postgres.js sends asks for an
   * answer; a link that lost the answer and stays up (a dropped packet behind a
   * NAT, a half-dead peer) otherwise holds the query, and every commit of its
   * session queued behind it, for good. Its query then fails as a lost
   * connection: a read is read again, a commit sent again, safely.
   */
  constructor(answerMs: number) {
    this.#answerMs = answerMs;
  }

  /** A socket connecting to the next host, for postgres.js's `socket` option. */
  open = (target: SocketTarget): net.Socket => {
    if (this.#closed) throw new BrainError("journal_closed", "the journal is closed");
    const socket = new net.Socket();
    // Watched once connecting: Deno's node:net sets the socket's own `write` as it connects.
    if (target.path) return this.#watched(socket.connect(target.path));
    const index = this.#opened++ % target.host.length;
    const [host, port] = [target.host[index], target.port[index] ?? target.port[0]];
    // postgres.js names these in its connection errors.
    return Object.assign(this.#watched(socket.connect(port, host)), { host, port });
  };

  /**
   * `socket`, destroyed once an answer is owed on it and nothing was heard for
   * the answer time. Each startup, `Sync` and simple `Query` message written
   * is owed a `ReadyForQuery`; any byte heard restarts the wait.
   */
  #watched(socket: net.Socket): net.Socket {
    let owed = 0;
    let silence: ReturnType<typeof setTimeout> | undefined;
    const wait = () => {
      clearTimeout(silence);
      silence = owed > 0 && !socket.destroyed
        ? setTimeout(() => {
          socket.destroy(Object.assign(new Error("the database did not answer in time"), { code: "ECONNRESET" }));
        }, this.#answerMs)
        : undefined;
    };
    const written = messageTypes(true, (type) => {
      if (type === STARTUP || type === SYNC || type === QUERY) owed++;
    });
    const heard = messageTypes(false, (type) => {
      if (type === READY_FOR_QUERY && owed > 0) owed--;
    });
    let writes = 0, connected = false;
    socket.once("connect", () => connected = true);
    // A connection postgres.js left unable to write (see closesAfterItsWrites) writes no startup on its next socket:
    // failing the socket fails the query waiting for it as lost (read or sent again) at once, not at connect_timeout.
    const mute = setTimeout(() => {
      socket.destroy(Object.assign(new Error("nothing was written to connect"), { code: "ECONNRESET" }));
    }, STARTUP_WRITE_MS);
    const write = socket.write;
    socket.write = ((...args: Parameters<net.Socket["write"]>) => {
      const [data] = args;
      if (writes++ === 0) clearTimeout(mute);
      written(typeof data === "string" ? encoder.encode(data) : data as Uint8Array);
      if (silence === undefined) wait();
      return write.apply(socket, args);
    }) as net.Socket["write"];
    socket.on("data", (data: Uint8Array) => {
      heard(data);
      wait();
    });
    socket.on("close", () => {
      clearTimeout(silence);
      clearTimeout(mute);
    });
    closesAfterItsWrites(socket, () => writes, () => connected);
    return socket;
  }

  /** Opens no more sockets. */
  close(): void {
    this.#closed = true;
  }
}

/**
 * Tells postgres.js of `socket`'s close once no write it scheduled is pending.
 * postgres.js 3.4 writes a connection's messages in a setImmediate that it
 * clears when the socket closes, keeping the timer's handle: the connection
 * never writes again (its next socket gets no startup, and each query given it
 * waits out connect_timeout, time after time). So the close waits at least one
 * turn, then until a turn with no write. A socket that was connected closes as
 * without error, so postgres.js also fails the queries it gave the connection
 * after the error it heard: on an error it fails the current ones only, and on
 * a close that says there was one it leaves the later ones waiting for good.
 */
function closesAfterItsWrites(socket: net.Socket, writes: () => number, connected: () => boolean): void {
  const emit = socket.emit as (this: net.Socket, event: string | symbol, ...args: unknown[]) => boolean;
  socket.emit = function (this: net.Socket, event: string | symbol, ...args: unknown[]): boolean {
    if (event !== "close") return emit.call(this, event, ...args);
    let seen = -1;
    const tell = (turns: number) =>
      setImmediate(() => {
        if (writes() !== seen && turns > 0) {
          seen = writes();
          return tell(turns - 1);
        }
        emit.call(this, "close", connected() ? false : args[0]);
      });
    tell(CLOSE_TURNS_MAX);
    return true;
  } as net.Socket["emit"];
}

const encoder = new TextEncoder();
/** How many turns a socket's close may wait for the writes postgres.js still makes on it. */
const CLOSE_TURNS_MAX = 16;
/** How long a new socket may go without postgres.js writing its startup (it writes it in the next turn). */
const STARTUP_WRITE_MS = 2_000;
/** The type postgres.js's untyped first message (its startup) is given here. */
const STARTUP = 0;
const SYNC = 0x53;
const QUERY = 0x51;
const READY_FOR_QUERY = 0x5a;

/**
 * Splits a stream of PostgreSQL protocol messages (a type byte, then a length
 * that counts itself), chunk by chunk, and tells `seen` each message's type;
 * with `untypedFirst`, the first message has no type byte (a startup).
 */
function messageTypes(untypedFirst: boolean, seen: (type: number) => void): (chunk: Uint8Array) => void {
  let untyped = untypedFirst;
  const head = new Uint8Array(5);
  let filled = 0;
  let remaining = 0;
  return (chunk) => {
    let at = 0;
    while (at < chunk.length) {
      if (remaining > 0) {
        const skipped = Math.min(remaining, chunk.length - at);
        remaining -= skipped;
        at += skipped;
        continue;
      }
      const size = untyped ? 4 : 5;
      const taken = Math.min(size - filled, chunk.length - at);
      head.set(chunk.subarray(at, at + taken), filled);
      filled += taken;
      at += taken;
      if (filled < size) return;
      remaining = new DataView(head.buffer).getInt32(untyped ? 0 : 1) - 4;
      seen(untyped ? STARTUP : head[0]);
      filled = 0;
      untyped = false;
    }
  };
}
