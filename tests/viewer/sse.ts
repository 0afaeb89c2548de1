import { lines } from "../_support/lines.ts";

/** One Server-Sent Event as a client sees it. */
export interface ServerEvent {
  id?: string;
  event?: string;
  data: string;
  retry?: number;
}

/** The events of an SSE response body, parsed as the EventSource specification describes (comments skipped). */
export async function* serverEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerEvent> {
  let event: ServerEvent = { data: "" };
  let data: string[] = [];
  for await (const line of lines(body)) {
    if (line === "") {
      if (data.length > 0 || event.retry !== undefined) yield { ...event, data: data.join("\n") };
      event = { data: "" };
      data = [];
      continue;
    }
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "data") data.push(value);
    else if (field === "id") event.id = value;
    else if (field === "event") event.event = value;
    else if (field === "retry") event.retry = Number(value);
  }
}

/** The next `record` event's parsed data, skipping other events; fails when the stream ends first. */
export async function nextRecord(
  events: AsyncGenerator<ServerEvent>,
): Promise<{ id: string; record: Record<string, unknown> }> {
  for (let next = await events.next(); !next.done; next = await events.next()) {
    if (next.value.event === "record") return { id: next.value.id!, record: JSON.parse(next.value.data) };
  }
  throw new Error("the stream ended before another record");
}
