/**
 * `wasi:http` (outgoing-handler and types) for a guest: requests go out only
 * to a host and port the grant's net allow-list names. Any other is refused
 * here with `HTTP-request-denied` before anything reaches the network; behind
 * this fence the sandbox's `--allow-net` is the same list. Redirects are not
 * followed (the guest sees the 3xx), so a granted host cannot lead elsewhere.
 */
import type { BlockingNet } from "./blocking_net.ts";
import type { NetFailure } from "./net_worker.ts";
import { InputStream, IoError, OutputStream, Pollable, wasiError } from "./streams.ts";

type Variant = { tag: string; val?: unknown };
type Failure = { kind: NetFailure; message: string };
type Settled = { ok?: { status: number; headers: [string, string][]; body: number }; err?: Failure };

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const ROOM = 65_536;
/** Headers the connection itself sets: a guest's copy is left out rather than contradicting it. */
const CONNECTION_HEADERS = new Set([
  "connection",
  "content-length",
  "host",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
]);
const NS_PER_MS = 1_000_000n;

/** The `wasi:http/types.error-code` for a failure the net Worker reported. */
export function httpErrorCode({ kind, message }: Failure): Variant {
  switch (kind) {
    case "denied":
      return { tag: "HTTP-request-denied" };
    case "refused":
      return { tag: "connection-refused" };
    case "reset":
    case "closed":
      return { tag: "connection-terminated" };
    case "timeout":
      return { tag: "connection-timeout" };
    case "dns":
      return { tag: "DNS-error", val: { rcode: undefined, infoCode: undefined } };
    default:
      return { tag: "internal-error", val: message };
  }
}

const latin1 = (bytes: Uint8Array) => String.fromCharCode(...bytes);
const bytesOf = (text: string) => Uint8Array.from(text, (char) => char.charCodeAt(0) & 0xff);

/**
 * The import objects for `wasi:http/types` and `wasi:http/outgoing-handler`.
 * `allowed` says whether `host:port` is in the grant's net allow-list.
 */
export function httpImports(net: BlockingNet, allowed: (hostPort: string) => boolean): Record<string, unknown> {
  const on = (key: number) => new Pollable(0, { waiter: net, key });

  class Fields {
    #entries: [string, Uint8Array][] = [];
    #immutable = false;
    static fromList(entries: [string, Uint8Array][]): Fields {
      const fields = new Fields();
      for (const [name, value] of entries) fields.append(name, value);
      return fields;
    }
    /** Fields the guest may read but not change. */
    static frozen(entries: [string, Uint8Array][]): Fields {
      const fields = Fields.fromList(entries);
      fields.#immutable = true;
      return fields;
    }
    get(name: string): Uint8Array[] {
      const key = name.toLowerCase();
      return this.#entries.filter(([entry]) => entry === key).map(([, value]) => value);
    }
    has(name: string): boolean {
      return this.get(name).length > 0;
    }
    set(name: string, values: Uint8Array[]): void {
      this.delete(name);
      for (const value of values) this.append(name, value);
    }
    delete(name: string): void {
      this.#check(name);
      this.#entries = this.#entries.filter(([entry]) => entry !== name.toLowerCase());
    }
    append(name: string, value: Uint8Array): void {
      this.#check(name, value);
      this.#entries.push([name.toLowerCase(), value]);
    }
    entries(): [string, Uint8Array][] {
      return this.#entries.map(([name, value]) => [name, value]);
    }
    clone(): Fields {
      return Fields.fromList(this.#entries);
    }
    #check(name: string, value: Uint8Array = new Uint8Array()): void {
      if (this.#immutable) throw wasiError({ tag: "immutable" });
      if (!TOKEN.test(name) || value.some((byte) => byte === 0 || byte === 10 || byte === 13)) {
        throw wasiError({ tag: "invalid-syntax" });
      }
    }
  }

  class OutgoingBody {
    #chunks: Uint8Array[] = [];
    #stream: OutputStream | undefined;
    #sink: number | undefined;
    #finished = false;
    write(): OutputStream {
      if (this.#stream) throw wasiError(undefined);
      this.#stream = new OutputStream((bytes) => this.#push(bytes.slice()), {
        room: () => this.#room(),
        subscribe: () => this.#sink === undefined ? new Pollable() : on(this.#sink),
      });
      return this.#stream;
    }
    static finish(body: OutgoingBody, trailers: Fields | undefined): void {
      body.#finished = true;
      if (body.#sink !== undefined) net.call("end", { key: body.#sink });
      if (trailers?.entries().length) throw wasiError({ tag: "internal-error", val: "trailers are not sent" });
    }
    /** The bytes written so far (none when there are none), and whether more may still be written. */
    static written(body: OutgoingBody | undefined): { bytes: Uint8Array | undefined; open: boolean } {
      if (!body) return { bytes: undefined, open: false };
      const bytes = new Uint8Array(body.#chunks.reduce((size, chunk) => size + chunk.byteLength, 0));
      let at = 0;
      for (const chunk of body.#chunks) {
        bytes.set(chunk, at);
        at += chunk.byteLength;
      }
      return { bytes: bytes.byteLength > 0 ? bytes : undefined, open: !body.#finished };
    }
    /** Sends what was written so far, and everything written later, to the request's body stream `sink`. */
    static attach(body: OutgoingBody, sink: number): void {
      const { bytes } = OutgoingBody.written(body);
      body.#chunks = [];
      body.#sink = sink;
      if (bytes) body.#push(bytes);
      if (body.#finished) net.call("end", { key: sink });
    }
    #push(bytes: Uint8Array): void {
      if (this.#sink === undefined) return void this.#chunks.push(bytes);
      const answer = net.call<{ error?: Failure }>("write", { key: this.#sink, bytes });
      if (answer.error) {
        throw wasiError({
          tag: "last-operation-failed",
          val: new IoError(answer.error.message, httpErrorCode(answer.error)),
        });
      }
    }
    #room(): bigint {
      if (this.#sink === undefined) return BigInt(ROOM);
      const { queued = 0 } = net.call<{ queued?: number }>("room", { key: this.#sink });
      return BigInt(Math.max(0, ROOM - queued));
    }
  }

  class OutgoingRequest {
    #headers: Fields;
    #method: Variant = { tag: "get" };
    #path: string | undefined;
    #scheme: Variant | undefined;
    #authority: string | undefined;
    #body: OutgoingBody | undefined;
    constructor(headers: Fields) {
      this.#headers = headers;
    }
    body(): OutgoingBody {
      if (this.#body) throw wasiError(undefined);
      return (this.#body = new OutgoingBody());
    }
    method(): Variant {
      return this.#method;
    }
    setMethod(method: Variant): void {
      if (method.tag === "other" && !TOKEN.test(String(method.val))) throw wasiError(undefined);
      this.#method = method;
    }
    pathWithQuery(): string | undefined {
      return this.#path;
    }
    setPathWithQuery(path: string | undefined): void {
      if (path !== undefined && /[\s#]/.test(path)) throw wasiError(undefined);
      this.#path = path;
    }
    scheme(): Variant | undefined {
      return this.#scheme;
    }
    setScheme(scheme: Variant | undefined): void {
      this.#scheme = scheme;
    }
    authority(): string | undefined {
      return this.#authority;
    }
    setAuthority(authority: string | undefined): void {
      if (authority !== undefined && /[\s/?#@]/.test(authority)) throw wasiError(undefined);
      this.#authority = authority;
    }
    headers(): Fields {
      return this.#headers;
    }
    /** Everything `handle` needs. */
    static parts(request: OutgoingRequest) {
      return {
        method: request.#method,
        path: request.#path,
        scheme: request.#scheme,
        authority: request.#authority,
        headers: request.#headers,
        body: request.#body,
      };
    }
  }

  class RequestOptions {
    #timeouts: Record<"connect" | "firstByte" | "betweenBytes", bigint | undefined> = {
      connect: undefined,
      firstByte: undefined,
      betweenBytes: undefined,
    };
    connectTimeout(): bigint | undefined {
      return this.#timeouts.connect;
    }
    setConnectTimeout(duration: bigint | undefined): void {
      this.#timeouts.connect = duration;
    }
    firstByteTimeout(): bigint | undefined {
      return this.#timeouts.firstByte;
    }
    setFirstByteTimeout(duration: bigint | undefined): void {
      this.#timeouts.firstByte = duration;
    }
    betweenBytesTimeout(): bigint | undefined {
      return this.#timeouts.betweenBytes;
    }
    setBetweenBytesTimeout(duration: bigint | undefined): void {
      this.#timeouts.betweenBytes = duration;
    }
    /** How long the response head may take, in milliseconds, when the guest set a limit. */
    static headMs(options: RequestOptions | undefined): number | undefined {
      const { connect, firstByte } = options ? options.#timeouts : {};
      const limit = (connect ?? 0n) + (firstByte ?? 0n);
      return limit > 0n ? Number(limit / NS_PER_MS) || 1 : undefined;
    }
  }

  class FutureTrailers {
    #taken = false;
    subscribe(): Pollable {
      return new Pollable();
    }
    get() {
      if (this.#taken) return { tag: "err", val: undefined };
      this.#taken = true;
      return { tag: "ok", val: { tag: "ok", val: undefined } };
    }
  }

  class IncomingBody {
    #key: number;
    #stream: InputStream | undefined;
    constructor(key: number) {
      this.#key = key;
    }
    stream(): InputStream {
      if (this.#stream) throw wasiError(undefined);
      const key = this.#key;
      this.#stream = new InputStream(
        (max) => {
          const read = net.call<{ bytes?: Uint8Array; end?: true; error?: Failure }>("take", { key, max });
          if (read.error) {
            throw wasiError({
              tag: "last-operation-failed",
              val: new IoError(read.error.message, httpErrorCode(read.error)),
            });
          }
          return read.end ? undefined : read.bytes;
        },
        () => on(key),
        () => net.drop(key),
      );
      return this.#stream;
    }
    static finish(body: IncomingBody): FutureTrailers {
      net.drop(body.#key);
      return new FutureTrailers();
    }
    [Symbol.dispose](): void {
      if (!this.#stream) net.drop(this.#key);
    }
  }

  class IncomingResponse {
    #status: number;
    #headers: Fields;
    #body: IncomingBody | undefined;
    constructor(status: number, headers: [string, string][], body: number) {
      this.#status = status;
      this.#headers = Fields.frozen(headers.map(([name, value]) => [name, bytesOf(value)]));
      this.#body = new IncomingBody(body);
    }
    status(): number {
      return this.#status;
    }
    headers(): Fields {
      return this.#headers;
    }
    consume(): IncomingBody {
      const body = this.#body;
      if (!body) throw wasiError(undefined);
      this.#body = undefined;
      return body;
    }
  }

  class FutureIncomingResponse {
    #key: number;
    #taken = false;
    constructor(key: number) {
      this.#key = key;
    }
    subscribe(): Pollable {
      return on(this.#key);
    }
    get() {
      if (this.#taken) return { tag: "err", val: undefined };
      const settled = net.call<Settled | undefined>("settled", { key: this.#key });
      if (!settled) return undefined;
      this.#taken = true;
      net.drop(this.#key);
      if (!settled.ok) return { tag: "ok", val: { tag: "err", val: httpErrorCode(settled.err!) } };
      const { status, headers, body } = settled.ok;
      net.track(body);
      return { tag: "ok", val: { tag: "ok", val: new IncomingResponse(status, headers, body) } };
    }
    [Symbol.dispose](): void {
      if (!this.#taken) net.drop(this.#key);
    }
  }

  /** A Tool serves no HTTP: a guest can make a response but never has a request or an outparam to send it to. */
  class OutgoingResponse {
    #status = 200;
    #headers: Fields;
    #body: OutgoingBody | undefined;
    constructor(headers: Fields) {
      this.#headers = headers;
    }
    statusCode(): number {
      return this.#status;
    }
    setStatusCode(status: number): void {
      if (status < 100 || status > 999) throw wasiError(undefined);
      this.#status = status;
    }
    headers(): Fields {
      return this.#headers;
    }
    body(): OutgoingBody {
      if (this.#body) throw wasiError(undefined);
      return (this.#body = new OutgoingBody());
    }
  }
  class IncomingRequest {}
  class ResponseOutparam {}

  function handle(request: OutgoingRequest, options: RequestOptions | undefined): FutureIncomingResponse {
    const { method, path, scheme, authority, headers, body } = OutgoingRequest.parts(request);
    const protocol = scheme?.tag === "HTTP" ? "http" : scheme === undefined || scheme.tag === "HTTPS" ? "https" : "";
    if (!protocol || !authority) throw wasiError({ tag: "HTTP-request-URI-invalid" });
    let url: URL;
    try {
      if (path !== undefined && !path.startsWith("/")) throw new Error("a path starts with /");
      url = new URL(`${protocol}://${authority}${path ?? "/"}`);
    } catch {
      throw wasiError({ tag: "HTTP-request-URI-invalid" });
    }
    const port = url.port || (protocol === "http" ? "80" : "443");
    if (!allowed(`${url.hostname}:${port}`)) throw wasiError({ tag: "HTTP-request-denied" });
    if (net.full) throw wasiError({ tag: "connection-limit-reached" });
    const name = method.tag === "other" ? String(method.val) : method.tag.toUpperCase();
    const { bytes, open } = OutgoingBody.written(body);
    // A body still being written is streamed; GET and HEAD send none.
    const streamed = open && name !== "GET" && name !== "HEAD";
    const sent = net.call<{ future: number; sink?: number; error?: Failure }>("fetch", {
      url: url.href,
      method: name,
      headers: headers.entries().filter(([header]) => !CONNECTION_HEADERS.has(header))
        .map(([header, value]) => [header, latin1(value)]),
      body: streamed || name === "GET" || name === "HEAD" ? undefined : bytes,
      stream: streamed,
      timeoutMs: RequestOptions.headMs(options),
    });
    if (sent.error) throw wasiError(httpErrorCode(sent.error));
    net.track(sent.future);
    net.track(sent.sink);
    if (streamed) OutgoingBody.attach(body!, sent.sink!);
    return new FutureIncomingResponse(sent.future);
  }

  return {
    "wasi:http/types": {
      Fields,
      FutureIncomingResponse,
      FutureTrailers,
      IncomingBody,
      IncomingRequest,
      IncomingResponse,
      OutgoingBody,
      OutgoingRequest,
      OutgoingResponse,
      RequestOptions,
      ResponseOutparam,
      httpErrorCode: (error: IoError) => {
        const code = error instanceof IoError ? error.code as Variant | undefined : undefined;
        return code && typeof code === "object" && "tag" in code ? code : undefined;
      },
    },
    "wasi:http/outgoing-handler": { handle },
  };
}
