import net from "node:net";
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

  /** A socket connecting to the next host, for postgres.js's `socket` option. */
  open = (target: SocketTarget): net.Socket => {
    if (this.#closed) throw new BrainError("journal_closed", "the journal is closed");
    const socket = new net.Socket();
    if (target.path) return socket.connect(target.path);
    const index = this.#opened++ % target.host.length;
    const [host, port] = [target.host[index], target.port[index] ?? target.port[0]];
    // postgres.js names these in its connection errors.
    return Object.assign(socket.connect(port, host), { host, port });
  };

  /** Opens no more sockets. */
  close(): void {
    this.#closed = true;
  }
}
