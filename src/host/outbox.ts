/** How many bytes of UTF-8 a batch grows to before it is sent, unless the peer or the transport wants less. */
const BATCH_BYTES = 64 * 1024;
const encoder = new TextEncoder();

/** What an outbox sends on: a `WebSocket`, or the host client's own socket. */
export interface Sender {
  readonly readyState: number;
  /** Bytes sent and not yet written to the connection (a `WebSocket`'s); absent where the sender does not know. */
  readonly bufferedAmount?: number;
  send(text: string): void;
  close(code?: number, reason?: string): void;
}

/** The close code of a socket whose peer stopped reading: policy violation. */
export const STALLED_CLOSE = 1008;

/**
 * The frames written to one WebSocket in the same turn of the event loop, sent
 * as one message once the turn's synchronous work is done: a lone frame as
 * itself, several as a JSON array of frames in the order they were written. 64
 * concurrent calls then cost a handful of messages each way instead of 64.
 * A batch never grows past its byte limit; a larger frame is sent alone.
 */
export class Outbox {
  #socket: Sender;
  #texts: string[] = [];
  #bytes = 0;
  #maxBytes = BATCH_BYTES;
  #scheduled = false;
  #maxUnread = Infinity;
  #onStalled: () => void = () => {};

  constructor(socket: Sender, maxBytes?: number) {
    this.#socket = socket;
    this.limit(maxBytes);
  }

  /**
   * Gives up the socket once more than `bytes` sent earlier are still unread by
   * the peer when more is to be sent: a peer that never reads would otherwise
   * grow this process's memory without end. The socket is closed
   * {@linkcode STALLED_CLOSE} and `onStalled` called, once; what is written later is dropped.
   */
  stallAt(bytes: number, onStalled: () => void): void {
    this.#maxUnread = bytes;
    this.#onStalled = onStalled;
  }

  /** Caps batches at `bytes` of UTF-8: the largest frame the peer reads, or what its transport sends at once. */
  limit(bytes: unknown): void {
    if (typeof bytes === "number" && bytes > 0) this.#maxBytes = Math.min(this.#maxBytes, bytes);
  }

  /** Queues one frame; a socket that is not open drops it, and its close settles what it carried. */
  write(frame: object): void {
    if (this.#socket.readyState !== OPEN) return;
    const text = JSON.stringify(frame);
    const bytes = NON_ASCII.test(text) ? encoder.encode(text).length : text.length;
    // The brackets and commas of a batch count too.
    if (this.#bytes + bytes + 2 > this.#maxBytes) this.flush();
    this.#texts.push(text);
    this.#bytes += bytes + 1;
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(this.flush);
  }

  /** Sends what is queued now. */
  flush = (): void => {
    this.#scheduled = false;
    const texts = this.#texts;
    if (texts.length === 0) return;
    this.#texts = [];
    this.#bytes = 0;
    if (this.#socket.readyState !== OPEN) return;
    if ((this.#socket.bufferedAmount ?? 0) > this.#maxUnread) return this.#stall();
    try {
      this.#socket.send(texts.length === 1 ? texts[0] : `[${texts.join(",")}]`);
    } catch {
      // The socket is closing; its close settles what was sent on it.
    }
  };

  #stall(): void {
    this.#socket.close(STALLED_CLOSE, "the peer does not read what it is sent");
    this.#onStalled();
  }
}

const NON_ASCII = /[\u0080-\uffff]/;

/** `WebSocket.OPEN`. */
const OPEN = 1;
