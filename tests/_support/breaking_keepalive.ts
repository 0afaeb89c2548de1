/**
 * A raw HTTP/1.1 server on 127.0.0.1 that answers the first request of each
 * connection through `handler` (chunked, keep-alive) and, for any later request
 * on the same connection, reads it whole and then closes the connection without
 * answering: a reused keep-alive connection that breaks after the request was sent.
 * `received` counts every request read, by path. `await using` closes it.
 */
export function breakingKeepAlive(handler: (request: Request) => Response | Promise<Response>): {
  url: string;
  host: string;
  received: Map<string, number>;
  [Symbol.asyncDispose](): Promise<void>;
} {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  const received = new Map<string, number>();
  const connections = new Set<Deno.Conn>();
  const serving = (async () => {
    for await (const conn of listener) {
      connections.add(conn);
      serveConnection(conn, `http://127.0.0.1:${port}`, handler, received)
        .catch(() => {})
        .finally(() => {
          connections.delete(conn);
          try {
            conn.close();
          } catch {
            // already closed
          }
        });
    }
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    received,
    async [Symbol.asyncDispose]() {
      listener.close();
      for (const conn of connections) conn.close();
      await serving;
    },
  };
}

async function serveConnection(
  conn: Deno.Conn,
  origin: string,
  handler: (request: Request) => Response | Promise<Response>,
  received: Map<string, number>,
): Promise<void> {
  const reader = new Reader(conn);
  for (let index = 0;; index++) {
    const head = await reader.until(new TextEncoder().encode("\r\n\r\n"));
    if (head === undefined) return;
    const [start, ...fields] = new TextDecoder().decode(head).split("\r\n");
    const [method, path] = start.split(" ");
    const headers = new Headers();
    for (const field of fields) {
      const colon = field.indexOf(":");
      if (colon > 0) headers.append(field.slice(0, colon).trim(), field.slice(colon + 1).trim());
    }
    const body = await reader.exactly(Number(headers.get("content-length") ?? 0));
    if (body === undefined) return;
    received.set(path, (received.get(path) ?? 0) + 1);
    if (index > 0) return;
    const response = await handler(
      new Request(origin + path, {
        method,
        headers,
        body: method === "GET" ? undefined : body as Uint8Array<ArrayBuffer>,
      }),
    );
    const lines = [`HTTP/1.1 ${response.status} OK`, "transfer-encoding: chunked", "connection: keep-alive"];
    response.headers.forEach((value, name) => name !== "content-length" && lines.push(`${name}: ${value}`));
    await write(conn, new TextEncoder().encode(lines.join("\r\n") + "\r\n\r\n"));
    if (response.body) {
      for await (const chunk of response.body) {
        await write(conn, new TextEncoder().encode(`${chunk.length.toString(16)}\r\n`));
        await write(conn, chunk);
        await write(conn, new TextEncoder().encode("\r\n"));
      }
    }
    await write(conn, new TextEncoder().encode("0\r\n\r\n"));
  }
}

async function write(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let written = 0; written < bytes.length;) written += await conn.write(bytes.subarray(written));
}

/** Buffered reads from a connection. */
class Reader {
  #conn: Deno.Conn;
  #buffer = new Uint8Array(0);

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  /** Bytes up to and including `marker`, or undefined when the connection ends first. */
  async until(marker: Uint8Array): Promise<Uint8Array | undefined> {
    for (;;) {
      const at = indexOf(this.#buffer, marker);
      if (at >= 0) return this.#take(at + marker.length);
      if (!await this.#more()) return undefined;
    }
  }

  /** Exactly `length` bytes, or undefined when the connection ends first. */
  async exactly(length: number): Promise<Uint8Array | undefined> {
    while (this.#buffer.length < length) if (!await this.#more()) return undefined;
    return this.#take(length);
  }

  #take(length: number): Uint8Array<ArrayBuffer> {
    const taken = this.#buffer.slice(0, length);
    this.#buffer = this.#buffer.slice(length);
    return taken;
  }

  async #more(): Promise<boolean> {
    const chunk = new Uint8Array(64 * 1024);
    const read = await this.#conn.read(chunk);
    if (read === null) return false;
    const joined = new Uint8Array(this.#buffer.length + read);
    joined.set(this.#buffer);
    joined.set(chunk.subarray(0, read), this.#buffer.length);
    this.#buffer = joined;
    return true;
  }
}

function indexOf(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let at = 0; at + needle.length <= haystack.length; at++) {
    for (let index = 0; index < needle.length; index++) if (haystack[at + index] !== needle[index]) continue outer;
    return at;
  }
  return -1;
}
