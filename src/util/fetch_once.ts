/**
 * `fetch` that sends the request at most once. Deno's default client sends a
 * request again on a fresh connection when a reused keep-alive connection breaks
 * after the request was written (measured: one POST reached the server twice),
 * and a Tool call must never be sent twice. This request gets its own client
 * that keeps no idle connection, so it never travels on a reused one; the client
 * closes when the response body ends, fails or is cancelled (or the fetch fails). A redirect is
 * answered as it is, never followed: it could lead past a net grant, and a 307 would send the request again.
 */
export async function fetchOnce(input: URL | string, init: RequestInit = {}): Promise<Response> {
  const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
  let open = true;
  const close = () => {
    if (open) client.close();
    open = false;
  };
  let response: Response;
  try {
    response = await fetch(input, { ...init, client, redirect: "manual" });
  } catch (error) {
    close();
    throw error;
  }
  if (!response.body) {
    close();
    return response;
  }
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (!done) return controller.enqueue(value);
        close();
        controller.close();
      } catch (error) {
        close();
        controller.error(error);
      }
    },
    async cancel(reason) {
      await reader.cancel(reason).catch(() => {});
      close();
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * True when `error`, from a rejected `fetch`, is known to have happened before
 * the request was sent: Deno reports connection-phase failures (DNS, a refused
 * connection, a blocked port, a bad URL) as a TypeError whose cause names the
 * `Connect` step, and a missing permission as NotCapable. Any other failure may
 * have come after the server received the request.
 */
export function fetchNeverSent(error: unknown): boolean {
  if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) return true;
  if (!(error instanceof TypeError)) return false;
  const text = `${error.message} ${error.cause instanceof Error ? error.cause.message : ""}`;
  return /client error \(Connect\)|Requests to port \d+ are blocked|Invalid URL|dns error|Connection refused/i
    .test(text);
}
