/**
 * `wasi:sockets` for a guest: TCP connections and name lookups reach only the
 * hosts (and ports) the grant's net allow-list names; anything else fails with
 * `access-denied` before it reaches the network, and behind this fence the
 * sandbox's `--allow-net` is the same list. An address found by looking up a
 * granted name counts as that name. A Tool listens on nothing: binding and
 * listening are refused, and UDP is not supported.
 */
import type { BlockingNet } from "./blocking_net.ts";
import type { NetFailure } from "./net_worker.ts";
import { InputStream, IoError, OutputStream, Pollable, wasiError } from "./streams.ts";

type Family = "ipv4" | "ipv6";
type IpAddress = { tag: "ipv4"; val: number[] } | { tag: "ipv6"; val: number[] };
type SocketAddress =
  | { tag: "ipv4"; val: { port: number; address: number[] } }
  | { tag: "ipv6"; val: { port: number; flowInfo: number; address: number[]; scopeId: number } };
type Failure = { kind: NetFailure; message: string };
type Connected = { input: number; output: number; conn: number; local: Deno.NetAddr; remote: Deno.NetAddr };

const ROOM = 65_536;

/** The `wasi:sockets/network.error-code` for a failure the net Worker reported. */
export function socketErrorCode({ kind }: Failure): string {
  switch (kind) {
    case "denied":
      return "access-denied";
    case "refused":
      return "connection-refused";
    case "reset":
    case "closed":
      return "connection-reset";
    case "timeout":
      return "timeout";
    case "dns":
      return "name-unresolvable";
    default:
      return "unknown";
  }
}

/** An address as text (`1.2.3.4`, `::1`), or undefined when `text` is not one. */
export function parseIp(text: string): IpAddress | undefined {
  const v4 = text.match(/^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/);
  if (v4) {
    const parts = v4.slice(1).map(Number);
    return parts.every((part) => part < 256) ? { tag: "ipv4", val: parts } : undefined;
  }
  const bare = text.replace(/^\[(.*)\]$/, "$1");
  if (!/^[0-9a-f:]+$/i.test(bare) || !bare.includes(":")) return undefined;
  const [head, tail, extra] = bare.split("::");
  if (extra !== undefined) return undefined;
  const groups = (part: string | undefined) => (part ? part.split(":").map((group) => parseInt(group, 16)) : []);
  const front = groups(head);
  const back = groups(tail);
  const missing = 8 - front.length - back.length;
  if (tail === undefined ? missing !== 0 : missing < 1) return undefined;
  const val = [...front, ...Array(tail === undefined ? 0 : missing).fill(0), ...back];
  return val.every((group) => Number.isInteger(group) && group <= 0xffff) ? { tag: "ipv6", val } : undefined;
}

/** An address as Deno and allow-lists write it: `1.2.3.4`, or `[::1]` (compressed, as URLs write it) for IPv6. */
export function ipText(address: IpAddress): string {
  if (address.tag === "ipv4") return address.val.join(".");
  return new URL(`http://[${address.val.map((group) => group.toString(16)).join(":")}]/`).hostname;
}

function socketAddress({ hostname, port }: Deno.NetAddr): SocketAddress {
  const address = parseIp(hostname) ?? { tag: "ipv4", val: [0, 0, 0, 0] };
  return address.tag === "ipv4"
    ? { tag: "ipv4", val: { port, address: address.val } }
    : { tag: "ipv6", val: { port, flowInfo: 0, address: address.val, scopeId: 0 } };
}

/**
 * The import objects of `wasi:sockets`: `network`, `instance-network`,
 * `ip-name-lookup`, `tcp`, `tcp-create-socket`, `udp` and `udp-create-socket`.
 * `allowed(host, port)` says whether the grant's net allow-list names `host`
 * (with `port`, or any port when it is undefined).
 */
export function socketsImports(
  net: BlockingNet,
  allowed: (host: string, port?: number) => boolean,
): { imports: Record<string, unknown>; endCall(): void } {
  /** Addresses found by looking up granted names in this call, with the name each came from. */
  const lookedUp = new Map<string, string>();
  const fail = (code: string): never => {
    throw wasiError(code);
  };
  const on = (key: number) => new Pollable(0, { waiter: net, key });

  class Network {}

  class ResolveAddressStream {
    #key: number | undefined;
    #addresses: IpAddress[] | undefined;
    #name: string;
    constructor(name: string, found?: IpAddress[]) {
      this.#name = name;
      this.#addresses = found;
      if (!found) {
        const started = net.call<{ future: number; error?: Failure }>("resolve", { name });
        if (started.error) fail(socketErrorCode(started.error));
        this.#key = started.future;
        net.track(this.#key);
      }
    }
    resolveNextAddress(): IpAddress | undefined {
      if (!this.#addresses) {
        const settled = net.call<{ ok?: string[]; err?: Failure } | undefined>("settled", { key: this.#key });
        if (!settled) return fail("would-block");
        net.drop(this.#key);
        if (settled.err) return fail(socketErrorCode(settled.err));
        this.#addresses = settled.ok!.flatMap((text) => {
          const address = parseIp(text);
          if (address) lookedUp.set(ipText(address), this.#name);
          return address ? [address] : [];
        });
      }
      return this.#addresses.shift();
    }
    subscribe(): Pollable {
      return this.#addresses || this.#key === undefined ? new Pollable() : on(this.#key);
    }
    [Symbol.dispose](): void {
      net.drop(this.#key);
    }
  }

  function resolveAddresses(_network: Network, name: string): ResolveAddressStream {
    const literal = parseIp(name);
    if (literal) return new ResolveAddressStream(name, [literal]);
    if (!name || !allowed(name.toLowerCase())) return fail(name ? "access-denied" : "invalid-argument");
    if (net.full) return fail("new-socket-limit");
    return new ResolveAddressStream(name.toLowerCase());
  }

  class TcpSocket {
    #family: Family;
    #state: "unbound" | "connecting" | "connected" | "closed" = "unbound";
    #connecting: number | undefined;
    #connected: Connected | undefined;
    #options = {
      keepAlive: false,
      keepAliveIdle: 7_200_000_000_000n,
      keepAliveInterval: 75_000_000_000n,
      keepAliveCount: 9,
      hopLimit: 64,
      receiveBuffer: 65_536n,
      sendBuffer: 65_536n,
    };
    constructor(family: Family) {
      this.#family = family;
    }
    startBind(): void {
      fail("access-denied");
    }
    finishBind(): void {
      fail("not-in-progress");
    }
    startConnect(_network: Network, remote: SocketAddress): void {
      if (this.#state !== "unbound") fail("invalid-state");
      if (remote.tag !== this.#family) fail("invalid-argument");
      const { port, address } = remote.val;
      const ip = ipText({ tag: remote.tag, val: address } as IpAddress);
      if (port === 0) fail("invalid-argument");
      const name = lookedUp.get(ip);
      const hostname = allowed(ip, port) ? ip : name !== undefined && allowed(name, port) ? name : undefined;
      if (hostname === undefined) fail("access-denied");
      if (net.full) fail("new-socket-limit");
      // Deno checks a granted name by name: connect to the name an address was found under.
      const started = net.call<{ future: number; error?: Failure }>("connect", {
        hostname: hostname!.replace(/^\[(.*)\]$/, "$1"),
        port,
      });
      if (started.error) fail(socketErrorCode(started.error));
      this.#connecting = started.future;
      net.track(this.#connecting);
      this.#state = "connecting";
    }
    finishConnect(): [InputStream, OutputStream] {
      if (this.#state !== "connecting") return fail("not-in-progress");
      const settled = net.call<{ ok?: Connected; err?: Failure } | undefined>("settled", { key: this.#connecting });
      if (!settled) return fail("would-block");
      net.drop(this.#connecting);
      if (settled.err) {
        this.#state = "closed";
        return fail(socketErrorCode(settled.err));
      }
      const connected = this.#connected = settled.ok!;
      for (const key of [connected.input, connected.output, connected.conn]) net.track(key);
      this.#state = "connected";
      const failed = (failure: Failure) =>
        wasiError({ tag: "last-operation-failed", val: new IoError(failure.message, socketErrorCode(failure)) });
      const input = new InputStream((max) => {
        const read = net.call<{ bytes?: Uint8Array; end?: true; error?: Failure }>("take", {
          key: connected.input,
          max,
        });
        if (read.error) throw failed(read.error);
        return read.end ? undefined : read.bytes;
      }, () => on(connected.input));
      const output = new OutputStream((bytes) => {
        const answer = net.call<{ error?: Failure }>("write", { key: connected.output, bytes: bytes.slice() });
        if (answer.error) throw failed(answer.error);
      }, {
        room: () => {
          const answer = net.call<{ error?: Failure; queued?: number }>("room", { key: connected.output });
          if (answer.error) throw failed(answer.error);
          return BigInt(Math.max(0, ROOM - answer.queued!));
        },
        subscribe: () => on(connected.output),
      });
      return [input, output];
    }
    startListen(): void {
      fail("access-denied");
    }
    finishListen(): void {
      fail("not-in-progress");
    }
    accept(): never {
      return fail("invalid-state");
    }
    localAddress(): SocketAddress {
      return this.#connected ? socketAddress(this.#connected.local) : fail("invalid-state");
    }
    remoteAddress(): SocketAddress {
      return this.#connected ? socketAddress(this.#connected.remote) : fail("invalid-state");
    }
    isListening(): boolean {
      return false;
    }
    addressFamily(): Family {
      return this.#family;
    }
    setListenBacklogSize(): void {
      fail("not-supported");
    }
    keepAliveEnabled(): boolean {
      return this.#options.keepAlive;
    }
    setKeepAliveEnabled(value: boolean): void {
      this.#options.keepAlive = value;
    }
    keepAliveIdleTime(): bigint {
      return this.#options.keepAliveIdle;
    }
    setKeepAliveIdleTime(value: bigint): void {
      if (value <= 0n) fail("invalid-argument");
      this.#options.keepAliveIdle = value;
    }
    keepAliveInterval(): bigint {
      return this.#options.keepAliveInterval;
    }
    setKeepAliveInterval(value: bigint): void {
      if (value <= 0n) fail("invalid-argument");
      this.#options.keepAliveInterval = value;
    }
    keepAliveCount(): number {
      return this.#options.keepAliveCount;
    }
    setKeepAliveCount(value: number): void {
      if (value <= 0) fail("invalid-argument");
      this.#options.keepAliveCount = value;
    }
    hopLimit(): number {
      return this.#options.hopLimit;
    }
    setHopLimit(value: number): void {
      if (value <= 0) fail("invalid-argument");
      this.#options.hopLimit = value;
    }
    receiveBufferSize(): bigint {
      return this.#options.receiveBuffer;
    }
    setReceiveBufferSize(value: bigint): void {
      if (value <= 0n) fail("invalid-argument");
      this.#options.receiveBuffer = value;
    }
    sendBufferSize(): bigint {
      return this.#options.sendBuffer;
    }
    setSendBufferSize(value: bigint): void {
      if (value <= 0n) fail("invalid-argument");
      this.#options.sendBuffer = value;
    }
    subscribe(): Pollable {
      return this.#state === "connecting" ? on(this.#connecting!) : new Pollable();
    }
    shutdown(how: "receive" | "send" | "both"): void {
      if (!this.#connected) fail("invalid-state");
      if (how !== "receive") net.call("end", { key: this.#connected!.output });
    }
    [Symbol.dispose](): void {
      const { input, output, conn } = this.#connected ?? {};
      net.drop(this.#connecting, input, output, conn);
    }
  }

  class UdpSocket {}
  class IncomingDatagramStream {}
  class OutgoingDatagramStream {}

  const imports = {
    "wasi:sockets/network": {
      Network,
      networkErrorCode: (
        error: IoError,
      ) => (error instanceof IoError && typeof error.code === "string" ? error.code : undefined),
    },
    "wasi:sockets/instance-network": { instanceNetwork: () => new Network() },
    "wasi:sockets/ip-name-lookup": { ResolveAddressStream, resolveAddresses },
    "wasi:sockets/tcp": { TcpSocket },
    "wasi:sockets/tcp-create-socket": {
      createTcpSocket: (
        family: Family,
      ) => (family === "ipv4" || family === "ipv6" ? new TcpSocket(family) : fail("not-supported")),
    },
    "wasi:sockets/udp": { UdpSocket, IncomingDatagramStream, OutgoingDatagramStream },
    "wasi:sockets/udp-create-socket": { createUdpSocket: () => fail("not-supported") },
  };
  return { imports, endCall: () => lookedUp.clear() };
}
