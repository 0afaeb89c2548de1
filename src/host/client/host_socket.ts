import { checkHeaders } from "../../util/http_headers.ts";
import { BrainError } from "../../outcome/errors.ts";
import { PROTOCOL_HEADER, protocolVersion } from "../protocol.ts";

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/** The largest message read from Brain; a larger one closes the socket 1009. */
const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;
/** How long a closing socket waits for Brain's close frame before it drops the connection. */
const CLOSE_WAIT_MS = 1_000;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A WebSocket client (RFC 6455, text messages) on a TCP connection with Nagle's
 * algorithm off. Deno's own `WebSocket` writes a message of more than 1 KiB as
 * two writes and Nagle's algorithm holds the second until the server's delayed
 * ACK, ~45 ms on loopback, so every report larger than 1 KiB would wait that
 * long. This one writes each message whole, at once. It has the callbacks,
 * `readyState`, `send` and `close` of a `WebSocket`. A failure to connect is
 * an error with a {@linkcode BrainError}, then a close with code 1006: a
 * refused upgrade names the HTTP status (401 is `unauthorized`), a TLS
 * handshake that fails (an untrusted certificate) is `connection_failed`.
 */
export class HostSocket {
  /** 0 connecting, 1 open, 2 closing, 3 closed, as a WebSocket's. */
  readyState = 0;
  /** The protocol version the server named in its upgrade's answer: 1 until it is open, or when it named none. */
  protocol = 1;
  /** Called once the upgrade is accepted. */
  onopen: (() => void) | null = null;
  /** Called with each text message. */
  onmessage: ((event: { data: string }) => void) | null = null;
  /** Called when connecting fails or the connection breaks. */
  onerror: ((event: { message: string; error: BrainError }) => void) | null = null;
  /** Called once, when the socket is closed: Brain's close code, or 1006 when there was none. */
  onclose: ((event: { code: number; reason: string }) => void) | null = null;

  #conn: Deno.Conn | undefined;
  #queue: Uint8Array[] = [];
  #writing = false;
  #closeCode = 1006;
  #closeReason = "";
  #closeTimer: ReturnType<typeof setTimeout> | undefined;
  /** Aborts a connect still in progress when the socket is dropped (a blackholed address would hold it for minutes). */
  #connecting = new AbortController();

  /**
   * Connects to a `ws:` or `wss:` URL, sending `headers` with the upgrade;
   * throws `invalid_argument` for another scheme or a header that would break
   * the request (a CR or LF in a token, say), before anything is sent.
   */
  constructor(url: URL, headers: Record<string, string>) {
    if (url.protocol !== "ws:" && url.protocol !== "wss:") {
      throw new BrainError("invalid_argument", `a host socket connects to ws: or wss:, not ${url.protocol}`);
    }
    this.#run(url, { ...checkHeaders("a host socket", headers) });
  }

  /** Sends one text message; dropped unless the socket is open. */
  send(text: string): void {
    if (this.readyState === 1) this.#write(textFrame(text));
  }

  /** Starts the closing handshake; the connection is dropped if Brain does not answer it in time. */
  close(code = 1000, reason = ""): void {
    if (this.readyState >= 2) return;
    // Not open yet: nothing to say goodbye to, and a connect or handshake may never end by itself.
    if (this.readyState === 0) return this.#drop();
    this.readyState = 2;
    const reasonBytes = encoder.encode(reason).slice(0, 123);
    const payload = new Uint8Array(2 + reasonBytes.length);
    new DataView(payload.buffer).setUint16(0, code);
    payload.set(reasonBytes, 2);
    this.#write(frame(8, payload));
    this.#closeTimer = setTimeout(() => this.#drop(), CLOSE_WAIT_MS);
  }

  async #run(url: URL, headers: Record<string, string>): Promise<void> {
    try {
      const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
      const secure = url.protocol === "wss:";
      const port = Number(url.port || (secure ? 443 : 80));
      const tcp = await Deno.connect({ hostname, port, signal: this.#connecting.signal });
      tcp.setNoDelay(true);
      this.#conn = tcp;
      if (this.readyState !== 0) return;
      if (secure) {
        // Held before the handshake, so close() can end a handshake the server never answers.
        const tls = this.#conn = await Deno.startTls(tcp, { hostname });
        if (this.readyState !== 0) return;
        await handshake(tls, url.host);
      }
      if (this.readyState !== 0) return;
      const rest = await this.#upgrade(url, headers);
      if (this.readyState !== 0) return;
      this.readyState = 1;
      this.onopen?.();
      await this.#read(rest);
    } catch (error) {
      const failure = error instanceof BrainError
        ? error
        : new BrainError("connection_lost", error instanceof Error ? error.message : String(error), { cause: error });
      if (this.readyState < 2) this.onerror?.({ message: failure.message, error: failure });
    } finally {
      this.#drop();
    }
  }

  /** Sends the upgrade request and reads its answer; resolves the bytes that followed it. */
  async #upgrade(url: URL, headers: Record<string, string>): Promise<Uint8Array> {
    const key = crypto.getRandomValues(new Uint8Array(16)).toBase64();
    const lines = [
      `GET ${url.pathname}${url.search} HTTP/1.1`,
      `Host: ${url.host}`,
      "Upgrade: websocket",
      "Connection: Upgrade",
      `Sec-WebSocket-Key: ${key}`,
      "Sec-WebSocket-Version: 13",
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ];
    this.#write(encoder.encode(`${lines.join("\r\n")}\r\n\r\n`));
    let head: Uint8Array = new Uint8Array(0);
    let end = -1;
    while (end < 0) {
      const chunk = await this.#chunk();
      if (!chunk) throw new Error("the server closed the connection during the upgrade");
      head = concat(head, chunk);
      end = indexOfBlankLine(head);
      if (end < 0 && head.length > 64 * 1024) throw new Error("the server's upgrade answer is too long");
    }
    const [status, ...fields] = decoder.decode(head.subarray(0, end)).split("\r\n");
    const code = Number(/^HTTP\/1\.[01] (\d{3})\b/.exec(status)?.[1]);
    if (code !== 101) throw refusal(code, status);
    const accept = fields.find((field) => /^sec-websocket-accept:/i.test(field))?.slice(21).trim();
    const expected = new Uint8Array(await crypto.subtle.digest("SHA-1", encoder.encode(key + GUID))).toBase64();
    if (accept !== expected) {
      throw new BrainError("protocol_error", "the server's upgrade answer has a wrong Sec-WebSocket-Accept");
    }
    const named = fields.find((field) => field.toLowerCase().startsWith(`${PROTOCOL_HEADER}:`));
    this.protocol = protocolVersion(named?.slice(PROTOCOL_HEADER.length + 1).trim());
    return head.subarray(end + 4);
  }

  /** Reads frames until the connection ends; `buffered` are bytes already read. */
  async #read(buffered: Uint8Array): Promise<void> {
    // Unparsed bytes are buffer[start, end); the buffer doubles when a frame needs more room.
    let buffer = new Uint8Array(Math.max(64 * 1024, buffered.length));
    buffer.set(buffered);
    let start = 0;
    let end = buffered.length;
    let fragments: Uint8Array[] = [];
    while (true) {
      const parsed = parseFrame(buffer.subarray(start, end));
      if (parsed === "too large") {
        this.close(1009, "message too large");
        return;
      }
      if (parsed === undefined) {
        if (start === end) start = end = 0;
        const room = Math.max(64 * 1024, neededBytes(buffer.subarray(start, end)));
        if (buffer.length - end < room) {
          const kept = end - start;
          if (buffer.length - kept >= room) buffer.copyWithin(0, start, end);
          else {
            const grown = new Uint8Array(Math.max(buffer.length * 2, kept + room));
            grown.set(buffer.subarray(start, end));
            buffer = grown;
          }
          start = 0;
          end = kept;
        }
        const read = await this.#conn!.read(buffer.subarray(end));
        if (read === null) return;
        end += read;
        continue;
      }
      const { fin, opcode, payload, size } = parsed;
      start += size;
      if (opcode === 8) return this.#closed(payload);
      if (opcode === 9) this.#write(frame(10, payload.slice()));
      if (opcode >= 8) continue;
      fragments.push(payload);
      if (!fin) {
        // A fragment's bytes are kept apart from the buffer the next reads overwrite.
        fragments[fragments.length - 1] = payload.slice();
        continue;
      }
      const message = fragments.length === 1 ? fragments[0] : fragments.reduce(concat);
      fragments = [];
      if (this.readyState === 1) this.onmessage?.({ data: decoder.decode(message) });
    }
  }

  /** Brain closed the socket: its close is answered, then the connection is dropped. */
  #closed(payload: Uint8Array): void {
    if (payload.length >= 2) {
      this.#closeCode = new DataView(payload.buffer, payload.byteOffset).getUint16(0);
      this.#closeReason = decoder.decode(payload.subarray(2));
    } else {
      this.#closeCode = 1005;
    }
    if (this.readyState === 1) {
      this.readyState = 2;
      this.#write(frame(8, payload.subarray(0, 2)));
    }
  }

  async #chunk(): Promise<Uint8Array | null> {
    const scratch = new Uint8Array(16 * 1024);
    const read = await this.#conn!.read(scratch);
    return read === null ? null : scratch.subarray(0, read);
  }

  #write(bytes: Uint8Array): void {
    this.#queue.push(bytes);
    if (!this.#writing) this.#pump();
  }

  async #pump(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#queue.length > 0) {
        let bytes = this.#queue.shift()!;
        while (bytes.length > 0) bytes = bytes.subarray(await this.#conn!.write(bytes));
      }
    } catch {
      // The connection broke: the read side ends and closes the socket.
      this.#closeConn();
    } finally {
      this.#writing = false;
      this.#queue = [];
    }
  }

  #closeConn(): void {
    try {
      this.#conn?.close();
    } catch {
      // Already closed.
    }
  }

  /** Closes the connection and tells `onclose`, once. */
  #drop(): void {
    this.#connecting.abort();
    this.#closeConn();
    if (this.readyState === 3) return;
    this.readyState = 3;
    clearTimeout(this.#closeTimer);
    this.onclose?.({ code: this.#closeCode, reason: this.#closeReason });
  }
}

/**
 * Completes a TLS handshake, so its failure is known before anything is sent: a
 * certificate or protocol error is `connection_failed`, for retrying cannot
 * mend it; a connection that drops meanwhile is `connection_lost`.
 */
async function handshake(tls: Deno.TlsConn, authority: string): Promise<void> {
  try {
    await tls.handshake();
  } catch (error) {
    if (!(error instanceof Deno.errors.InvalidData)) throw error;
    throw new BrainError(
      "connection_failed",
      `the TLS handshake with ${authority} failed: ${error.message}; a certificate from a private CA ` +
        `is trusted by starting Deno with --cert <ca.pem> (or DENO_CERT=<ca.pem>)`,
      { cause: error },
    );
  }
}

/** The error of an upgrade answered with `code` (its `status` line) instead of 101. */
function refusal(code: number, status: string): BrainError {
  const answer = Number.isNaN(code)
    ? `with ${JSON.stringify(status.slice(0, 80))}, not HTTP`
    : `with HTTP ${status.slice(9, 100)}`;
  if (code === 401) return new BrainError("unauthorized", `the server refused the WebSocket upgrade ${answer}`);
  if (code === 429) {
    return new BrainError(
      "limit_exceeded",
      `the server refused the WebSocket upgrade ${answer}: it has all the hosts it admits (maxHosts)`,
    );
  }
  return new BrainError(
    "connection_lost",
    `the server refused the WebSocket upgrade ${answer}: is the url that of a Brain server (deno task serve, serveBrain())?`,
  );
}

/** How many bytes the frame `buffer` starts needs in all, as far as its header tells; 0 when it does not yet. */
function neededBytes(buffer: Uint8Array): number {
  if (buffer.length < 2) return 0;
  const length = buffer[1] & 0x7f;
  const mask = buffer[1] & 0x80 ? 4 : 0;
  if (length < 126) return 2 + mask + length;
  if (length === 126) return buffer.length < 4 ? 0 : 4 + mask + ((buffer[2] << 8) | buffer[3]);
  if (buffer.length < 10) return 0;
  return 10 + mask + Number(new DataView(buffer.buffer, buffer.byteOffset).getBigUint64(2));
}

/** One frame from the client: final, masked as RFC 6455 requires. */
function frame(opcode: number, payload: Uint8Array): Uint8Array {
  const length = payload.length;
  const header = headerBytes(length);
  const bytes = new Uint8Array(header + 4 + length);
  bytes.set(payload, header + 4);
  return masked(bytes, opcode, header, length);
}

/** A text message as one frame: its UTF-8 written straight into the frame, then masked. */
function textFrame(text: string): Uint8Array {
  // A long text is encoded on its own first, rather than into room for its worst case.
  if (text.length > 64 * 1024) return frame(1, encoder.encode(text));
  // At most 3 bytes of UTF-8 per UTF-16 unit; an ASCII text is as long as its string.
  const most = text.length * 3;
  const header = headerBytes(most);
  const room = new Uint8Array(header + 4 + most);
  const { written } = encoder.encodeInto(text, room.subarray(header + 4));
  // The header was sized for the most the text could take; a shorter one moves up to meet its payload.
  const fit = headerBytes(written);
  const bytes = room.subarray(header - fit, header + 4 + written);
  return masked(bytes, 1, fit, written);
}

function headerBytes(length: number): number {
  return length < 126 ? 2 : length < 65_536 ? 4 : 10;
}

/** Writes the header of a final frame into `bytes` and masks its payload in place. */
function masked(bytes: Uint8Array, opcode: number, header: number, length: number): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  bytes[0] = 0x80 | opcode;
  if (length < 126) bytes[1] = 0x80 | length;
  else if (length < 65_536) (bytes[1] = 0x80 | 126, view.setUint16(2, length));
  else (bytes[1] = 0x80 | 127, view.setBigUint64(2, BigInt(length)));
  const key = maskKey();
  view.setUint32(header, key);
  const at = header + 4;
  // Four bytes at a time, big-endian as the key was written, then the rest one by one.
  const words = length >>> 2;
  for (let i = 0; i < words; i++) view.setUint32(at + i * 4, view.getUint32(at + i * 4) ^ key);
  for (let i = words * 4; i < length; i++) bytes[at + i] ^= (key >>> (24 - 8 * (i & 3))) & 0xff;
  return bytes;
}

/** Masking keys, drawn from the system's random source a batch at a time. */
const keys = new Uint32Array(256);
let nextKey = keys.length;

function maskKey(): number {
  if (nextKey === keys.length) (crypto.getRandomValues(keys), nextKey = 0);
  return keys[nextKey++];
}

type Parsed = { fin: boolean; opcode: number; payload: Uint8Array; size: number };

/** The first whole frame of `buffer`, undefined when more bytes are needed. */
function parseFrame(buffer: Uint8Array): Parsed | "too large" | undefined {
  if (buffer.length < 2) return undefined;
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  const masked = (buffer[1] & 0x80) !== 0;
  let length = buffer[1] & 0x7f;
  let at = 2;
  if (length === 126) {
    if (buffer.length < 4) return undefined;
    length = view.getUint16(2);
    at = 4;
  } else if (length === 127) {
    if (buffer.length < 10) return undefined;
    const big = view.getBigUint64(2);
    if (big > BigInt(MAX_MESSAGE_BYTES)) return "too large";
    length = Number(big);
    at = 10;
  }
  if (length > MAX_MESSAGE_BYTES) return "too large";
  const maskAt = at;
  if (masked) at += 4;
  if (buffer.length < at + length) return undefined;
  let payload = buffer.subarray(at, at + length);
  if (masked) {
    payload = payload.slice();
    for (let i = 0; i < length; i++) payload[i] ^= buffer[maskAt + (i & 3)];
  }
  return { fin: (buffer[0] & 0x80) !== 0, opcode: buffer[0] & 0x0f, payload, size: at + length };
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a);
  joined.set(b, a.length);
  return joined;
}

function indexOfBlankLine(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) return i;
  }
  return -1;
}
