/**
 * The transport floor for the host bench: the frames of a remote Tool call
 * exchanged over the same transport a host uses (the client's own
 * {@linkcode HostSocket}, a `Deno.serve` WebSocket upgrade on the server side),
 * each answered by an echo of itself, with no frame parsing, session or journal
 * behind it. Run as a script, the echo server listens on a free loopback port
 * and prints its URL, as `deno task serve` does.
 *
 * @module
 */
import { HostSocket } from "../src/host/client/host_socket.ts";

/** A WebSocket server on a free loopback port that answers each text message with the same text. */
export function serveEcho(): { url: string; shutdown: () => Promise<void> } {
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.onmessage = (event) => socket.send(event.data);
    return response;
  });
  return { url: `ws://${http.addr.hostname}:${http.addr.port}/`, shutdown: () => http.shutdown() };
}

/** The frames a call's caller sends, in its two round trips: the start, then the Tool's finish. */
const start = JSON.stringify({
  id: 5,
  op: "start",
  handle: crypto.randomUUID(),
  tool: "noop",
  input: {},
});
const session = crypto.randomUUID();
const finish = JSON.stringify({
  id: 6,
  op: "finish",
  session,
  call: 4,
  outcome: { status: "ok", value: null },
  cause: "finish",
});

/** A host socket to an echo server that exchanges a call's frames with it, one round trip at a time. */
export class EchoClient {
  #socket: HostSocket;
  #answers: ((text: string) => void)[] = [];

  private constructor(socket: HostSocket) {
    this.#socket = socket;
    socket.onmessage = ({ data }) => this.#answers.shift()?.(data);
  }

  /** Connects to the echo server at `url`. */
  static open(url: string): Promise<EchoClient> {
    const socket = new HostSocket(new URL(url), {});
    const { promise, resolve, reject } = Promise.withResolvers<EchoClient>();
    socket.onopen = () => resolve(new EchoClient(socket));
    socket.onerror = ({ error }) => reject(error);
    return promise;
  }

  /** Two round trips with the frames of one call: its start, then its finish. */
  async call(): Promise<void> {
    await this.#exchange(start);
    await this.#exchange(finish);
  }

  /** Two round trips with the frames of `n` concurrent calls, each direction's frames batched in one message. */
  async calls(n: number): Promise<void> {
    await this.#exchange(`[${Array(n).fill(start).join(",")}]`);
    await this.#exchange(`[${Array(n).fill(finish).join(",")}]`);
  }

  /** Closes the socket. */
  close(): void {
    this.#socket.close();
  }

  #exchange(text: string): Promise<string> {
    const { promise, resolve } = Promise.withResolvers<string>();
    this.#answers.push(resolve);
    this.#socket.send(text);
    return promise;
  }
}

if (import.meta.main) console.log(`echo listening on ${serveEcho().url}`);
