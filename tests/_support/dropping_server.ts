/**
 * A raw TCP server on 127.0.0.1 that reads each request's first bytes and then closes the
 * connection without answering (or, with `partial`, after the head of a response whose body
 * never completes): a connection lost after the request was sent. `received` counts the
 * requests it read. `await using` closes it.
 */
export function droppingServer({ partial = false }: { partial?: boolean } = {}): {
  url: string;
  host: string;
  readonly received: number;
  [Symbol.asyncDispose](): Promise<void>;
} {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  let received = 0;
  const serving = (async () => {
    for await (const conn of listener) {
      try {
        if (await conn.read(new Uint8Array(64 * 1024)) !== null) received++;
        if (partial) {
          await conn.write(new TextEncoder().encode(
            'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"half":',
          ));
        }
      } catch {
        // the client went first
      }
      conn.close();
    }
  })().catch(() => {});
  return {
    url: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    get received() {
      return received;
    },
    async [Symbol.asyncDispose]() {
      listener.close();
      await serving;
    },
  };
}
