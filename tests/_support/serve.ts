/** A real HTTP server on 127.0.0.1 (port 0) for one test; `await using` shuts it down. */
export function serve(
  fetch: (request: Request) => Response | Promise<Response>,
): { url: string; host: string; [Symbol.asyncDispose](): Promise<void> } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, fetch);
  const host = `127.0.0.1:${server.addr.port}`;
  return { url: `http://${host}`, host, [Symbol.asyncDispose]: () => server.shutdown() };
}
