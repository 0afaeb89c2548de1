/**
 * The journal viewer's live stream: how long a committed record takes to reach
 * an `EventSource` over loopback, against the commit alone (the baseline).
 * Run with `deno task bench`.
 */
import { MemoryJournal } from "../mod.ts";
import { createViewer } from "../src/viewer/viewer.ts";

const journal = new MemoryJournal();
await journal.createSession({ id: "s", createdAt: Date.now(), tools: [] });
await journal.createSession({ id: "plain", createdAt: Date.now(), tools: [] });
const viewer = createViewer(journal, { operatorToken: "bench" });
// EventSource sends no headers: the bench server adds the operator's, as a browser's cookie would.
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
  const headers = new Headers(request.headers);
  headers.set("authorization", "Bearer bench");
  return viewer.fetch(new Request(request, { headers }));
});
const source = new EventSource(`http://127.0.0.1:${server.addr.port}/v1/sessions/s/stream`);
let arrived = Promise.withResolvers<void>();
source.addEventListener("record", () => arrived.resolve());
await journal.append("s", [{ kind: "user_message", content: "warm up" }]);
await arrived.promise;

Deno.bench("commit a record", { group: "live stream", baseline: true }, async () => {
  await journal.append("plain", [{ kind: "user_message", content: "hello" }]);
});

Deno.bench("commit a record and receive it on an EventSource", { group: "live stream" }, async () => {
  arrived = Promise.withResolvers<void>();
  await journal.append("s", [{ kind: "user_message", content: "hello" }]);
  await arrived.promise;
});

globalThis.addEventListener("unload", () => {
  source.close();
  void server.shutdown();
});
