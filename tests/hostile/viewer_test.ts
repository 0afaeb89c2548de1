import assert from "node:assert/strict";
import { MemoryJournal } from "../../src/journal/memory.ts";
import type { ReadableJournal } from "../../src/viewer/readable_journal.ts";
import { createViewer } from "../../src/viewer/viewer.ts";
import { hashToken } from "../../src/embedded/host_token.ts";

const OPERATOR = "operator-secret";

Deno.test("hostile viewer streams: a client that stops reading is sent records only as it reads, holding nothing more", async () => {
  const journal = new MemoryJournal();
  await journal.createSession({ id: "s", createdAt: Date.now(), tools: [] });
  await journal.append("s", Array.from({ length: 500 }, (_, index) => ({ kind: "user_message", content: `${index}` })));
  let yielded = 0;
  const ended = Promise.withResolvers<void>();
  const counting: ReadableJournal = {
    read: (...args) => journal.read(...args),
    head: (...args) => journal.head(...args),
    openCalls: (...args) => journal.openCalls(...args),
    getSession: (...args) => journal.getSession(...args),
    listSessions: () => journal.listSessions(),
    async *subscribe(sessionId, options) {
      try {
        for await (const record of journal.subscribe(sessionId, options)) {
          yielded++;
          yield record;
        }
      } finally {
        ended.resolve();
      }
    },
  };
  const viewer = createViewer(counting, { operatorToken: OPERATOR });
  const response = await viewer.fetch(
    new Request("http://viewer.test/v1/sessions/s/stream", { headers: { authorization: `Bearer ${OPERATOR}` } }),
  );
  const reader = response.body!.getReader();
  for (let read = 0; read < 4; read++) await reader.read();
  // A commit after the client stopped reading: a pushing stream would read it and the 500 before it at once.
  await journal.append("s", [{ kind: "user_message", content: "sentinel" }]);
  // Follow every record up to the sentinel, as a pushing stream, started before, would have.
  for await (const record of journal.subscribe("s")) {
    if (record.kind === "user_message" && record.content === "sentinel") break;
  }
  assert.ok(yielded <= 5, `${yielded} of 501 records were taken from the journal for a client that read 4 chunks`);
  await reader.cancel();
  await ended.promise; // the subscription ended with the stream, releasing what it held
  await journal.close();
});

Deno.test("hostile viewer routes: an unknown path or method is 404 JSON with a code, not hono's text", async () => {
  const viewer = createViewer(new MemoryJournal(), { operatorToken: OPERATOR });
  const headers = { authorization: `Bearer ${OPERATOR}` };
  for (
    const [method, path] of [["GET", "/v1/sessions/%2e%2e/records"], ["GET", "//v1/sessions"], ["POST", "/v1/sessions"]]
  ) {
    const response = await viewer.fetch(new Request(`http://x${path}`, { method, headers }));
    assert.equal(response.status, 404, `${method} ${path}`);
    assert.equal((await response.json()).error.code, "invalid_argument", `${method} ${path}`);
  }
});

Deno.test("hostile viewer listings: credentials of hosts no session names list nothing, and never make the viewer scan its journal per request", async () => {
  const journal = new MemoryJournal();
  const host = { id: "app", tokenHash: await hashToken("app-token") };
  for (let index = 0; index < 20; index++) {
    await journal.createSession({ id: `app~s${index}`, createdAt: index, tools: [], host });
  }
  let scans = 0;
  const counting: ReadableJournal = {
    read: (...args) => journal.read(...args),
    head: (...args) => journal.head(...args),
    openCalls: (...args) => journal.openCalls(...args),
    getSession: (...args) => journal.getSession(...args),
    listSessions: () => (scans++, journal.listSessions()),
    subscribe: (...args) => journal.subscribe(...args),
  };
  const viewer = createViewer(counting, { operatorToken: OPERATOR });
  const list = async (id: string, token: string) => {
    const response = await viewer.fetch(
      new Request("http://viewer.test/v1/sessions", { headers: { authorization: `Basic ${btoa(`${id}:${token}`)}` } }),
    );
    return { status: response.status, body: await response.json() };
  };
  const strangers = await Promise.all(
    Array.from({ length: 50 }, (_, index) => list(index % 2 ? `stranger-${index}` : "app", `wrong-${index}`)),
  );
  for (const answer of strangers) assert.deepEqual(answer, { status: 200, body: { sessions: [] } });
  assert.ok(scans < 5, `50 requests of strangers scanned the journal ${scans} times`);
  assert.equal((await list("app", "app-token")).body.sessions.length, 20, "the host itself still lists its sessions");
});
