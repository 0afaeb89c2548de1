import type { ReadableJournal } from "./readable_journal.ts";

/** How long an idle stream waits before a comment line keeps proxies from closing it. */
export const KEEPALIVE_MS = 15_000;
/** How soon a disconnected `EventSource` reconnects, sent as the stream's `retry` field. */
export const RECONNECT_MS = 500;

/**
 * A Server-Sent Events response of a session's records from sequence `from`
 * on, then each new one as it commits. Each event is `record`, its `id` the
 * record's sequence and its `data` the record's JSON, so a reconnecting
 * `EventSource` sends `Last-Event-ID` and resumes after the last record it
 * saw. Each record carries `shownId` as its session id (a host sees its own
 * id for the session). The stream ends when the client goes away or the journal closes.
 */
export function recordEvents(
  journal: ReadableJournal,
  sessionId: string,
  from: number,
  shownId: string = sessionId,
): Response {
  const stop = new AbortController();
  const encoder = new TextEncoder();
  let keepalive: ReturnType<typeof setInterval> | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        if (!stop.signal.aborted) controller.enqueue(encoder.encode(text));
      };
      keepalive = setInterval(() => send(": keepalive\n\n"), KEEPALIVE_MS);
      send(`retry: ${RECONNECT_MS}\n\n`);
      (async () => {
        for await (const record of journal.subscribe(sessionId, { from, signal: stop.signal })) {
          const shown = { ...record, sessionId: shownId };
          send(`id: ${record.sequence}\nevent: record\ndata: ${JSON.stringify(shown)}\n\n`);
        }
      })().catch(() => {
        // A journal that fails mid-stream ends the stream; the client reconnects from its last id.
      }).finally(() => {
        clearInterval(keepalive);
        if (!stop.signal.aborted) controller.close();
      });
    },
    cancel() {
      clearInterval(keepalive);
      stop.abort();
    },
  });
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    },
  });
}
