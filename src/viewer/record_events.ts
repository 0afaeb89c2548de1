import type { ReadableJournal } from "./readable_journal.ts";
import type { JournalRecord } from "../journal/records.ts";

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
  const records = journal.subscribe(sessionId, { from, signal: stop.signal })[Symbol.asyncIterator]();
  // The next record, asked for once and kept across a keepalive.
  let next: Promise<IteratorResult<JournalRecord> | undefined> | undefined;
  // Pulled, not pushed: a record is read from the journal only once the client has read what came before it, so a
  // client that stops reading holds nothing more in this process.
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(`retry: ${RECONNECT_MS}\n\n`));
    },
    async pull(controller) {
      // A journal that fails mid-stream ends the stream; the client reconnects from its last id.
      next ??= records.next().catch(() => undefined);
      let idle: ReturnType<typeof setTimeout> | undefined;
      const waited = await Promise.race([
        next,
        new Promise<"idle">((resolve) => idle = setTimeout(() => resolve("idle"), KEEPALIVE_MS)),
      ]);
      clearTimeout(idle);
      if (stop.signal.aborted) return;
      if (waited === "idle") return controller.enqueue(encoder.encode(": keepalive\n\n"));
      next = undefined;
      if (!waited || waited.done) return controller.close();
      const shown = { ...waited.value, sessionId: shownId };
      controller.enqueue(
        encoder.encode(`id: ${waited.value.sequence}\nevent: record\ndata: ${JSON.stringify(shown)}\n\n`),
      );
    },
    cancel() {
      stop.abort();
      // Ends the subscription even while it waits at a record the client never asked for, releasing its watch.
      records.return?.(undefined).catch(() => {});
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
