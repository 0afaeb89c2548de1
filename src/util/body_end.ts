/**
 * `response` with the same status, headers and bytes, calling `ended` once when
 * its body has been read to the end, failed, or was cancelled (a client that
 * went away): at once when it has no body.
 */
export function onBodyEnd(response: Response, ended: () => void): Response {
  const body = response.body;
  if (body === null) {
    ended();
    return response;
  }
  let done = false;
  const end = () => {
    if (done) return;
    done = true;
    ended();
  };
  const reader = body.getReader();
  const tracked = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await reader.read();
        if (!chunk.done) return controller.enqueue(chunk.value);
        end();
        controller.close();
      } catch (error) {
        end();
        controller.error(error);
      }
    },
    cancel(reason) {
      end();
      return reader.cancel(reason);
    },
  });
  return new Response(tracked, { status: response.status, statusText: response.statusText, headers: response.headers });
}
