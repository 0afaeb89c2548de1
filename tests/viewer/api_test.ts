import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { MemoryJournal } from "../../src/journal/memory.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { createViewer } from "../../src/viewer/viewer.ts";
import { serve } from "../_support/serve.ts";
import { scratchDir } from "../_support/scratch.ts";
import { denoScript } from "../_support/deno_script.ts";
import { nextRecord, serverEvents } from "./sse.ts";
import { hasCode } from "../_support/has_code.ts";

const OPERATOR = "operator-secret";
const basic = (id: string, token: string) => `Basic ${btoa(`${id}:${token}`)}`;
const HOST_A = basic("app-a", "token-a");
const HOST_B = basic("app-b", "token-b");

const note = tool({
  name: "note",
  description: "Notes a text.",
  input: z.object({ text: z.string() }),
  run: async ({ text }, ctx) => {
    await ctx.emit("noted", { text });
    return ctx.finish({ length: text.length });
  },
});

async function get(
  viewer: { fetch(request: Request): Response | Promise<Response> },
  path: string,
  authorization?: string,
) {
  const response = await viewer.fetch(
    new Request(`http://viewer.test${path}`, { headers: authorization ? { authorization } : {} }),
  );
  return { status: response.status, body: await response.json() };
}

/** A Brain with one session of host A, one of host B and one without a host. */
async function threeSessions() {
  const brain = new Brain();
  const a = await brain.sessions.create({ id: "of-a", tools: [note()], host: { id: "app-a", token: "token-a" } });
  await a.call("note", { text: "hello" });
  await brain.sessions.create({ id: "of-b", host: { id: "app-b", token: "token-b" } });
  await brain.sessions.create({ id: "of-nobody" });
  return { brain, viewer: brain.viewer({ operatorToken: OPERATOR }) };
}

Deno.test("the operator sees every session; a host sees only its own; other credentials see nothing", async () => {
  const { brain, viewer } = await threeSessions();
  try {
    const ids = async (authorization: string) =>
      (await get(viewer, "/v1/sessions", authorization)).body.sessions.map((session: { id: string }) => session.id)
        .toSorted();
    assert.deepEqual(await ids(`Bearer ${OPERATOR}`), ["of-a", "of-b", "of-nobody"]);
    assert.deepEqual(await ids(HOST_A), ["of-a"]);
    assert.deepEqual(await ids(HOST_B), ["of-b"]);
    assert.deepEqual(await ids(basic("app-a", "wrong")), [], "a host id with the wrong token sees nothing");

    const summary = (await get(viewer, "/v1/sessions/of-a", HOST_A)).body;
    assert.equal(summary.host, "app-a");
    assert.equal(summary.head, 4, "started, event, result and finished");
    assert.deepEqual(summary.openCalls, []);
    assert.ok(!JSON.stringify(summary).includes("sha-256"), "the token hash never leaves the server");

    for (const wrong of [undefined, "Bearer nope", "Basic !!!", "Bearer", `Token ${OPERATOR}`]) {
      const { status, body } = await get(viewer, "/v1/sessions", wrong);
      assert.equal(status, 401, `${wrong} is refused`);
      assert.equal(body.error.code, "unauthorized");
    }
  } finally {
    await brain.close();
  }
});

Deno.test("a session the credential may not see answers exactly as one that does not exist, on every route", async () => {
  const { brain, viewer } = await threeSessions();
  try {
    for (const route of ["", "/records", "/stream"]) {
      const hidden = await get(viewer, `/v1/sessions/of-a${route}`, HOST_B);
      const missing = await get(viewer, `/v1/sessions/of-x${route}`, HOST_B);
      assert.equal(hidden.status, 404);
      assert.equal(missing.status, 404);
      assert.deepEqual(hidden.body, { error: { code: "session_not_found", message: "no session of-a" } });
      assert.deepEqual(missing.body, { error: { code: "session_not_found", message: "no session of-x" } });
      const unplaced = await get(viewer, `/v1/sessions/of-nobody${route}`, HOST_A);
      assert.equal(unplaced.status, 404, "a session without a host is the operator's alone");
    }
  } finally {
    await brain.close();
  }
});

Deno.test("without an operator token only hosts' credentials are accepted", async () => {
  await using brain = new Brain();
  await brain.sessions.create({ id: "s", host: { id: "app-a", token: "token-a" } });
  const viewer = brain.viewer();
  assert.equal((await get(viewer, "/v1/sessions", "Bearer ")).status, 401);
  assert.equal((await get(viewer, "/v1/sessions", "Bearer anything")).status, 401);
  assert.equal((await get(viewer, "/v1/sessions/s", HOST_A)).body.id, "s");
});

Deno.test("sign-in keeps the credential in an HttpOnly cookie that authorizes later requests; sign-out drops it", async () => {
  const { brain, viewer } = await threeSessions();
  try {
    const refused = await viewer.fetch(
      new Request("http://viewer.test/v1/viewer/login", { method: "POST", headers: { authorization: "Bearer no" } }),
    );
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get("set-cookie"), null);

    const login = await viewer.fetch(
      new Request("http://viewer.test/v1/viewer/login", { method: "POST", headers: { authorization: HOST_A } }),
    );
    assert.deepEqual(await login.json(), { kind: "host", id: "app-a" });
    const cookie = login.headers.get("set-cookie")!;
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
    const pair = cookie.split(";")[0];
    const listed = await viewer.fetch(new Request("http://viewer.test/v1/sessions", { headers: { cookie: pair } }));
    assert.deepEqual((await listed.json()).sessions.map((session: { id: string }) => session.id), ["of-a"]);
    const me = await viewer.fetch(new Request("http://viewer.test/v1/viewer/me", { headers: { cookie: pair } }));
    assert.deepEqual(await me.json(), { kind: "host", id: "app-a" });

    const logout = await viewer.fetch(new Request("http://viewer.test/v1/viewer/logout", { method: "POST" }));
    await logout.body?.cancel();
    assert.match(logout.headers.get("set-cookie")!, /^brain_viewer=;.*Max-Age=0/);
  } finally {
    await brain.close();
  }
});

Deno.test("sessions page newest first with a cursor that later sessions never shift; bad paging is invalid_argument", async () => {
  const journal = new MemoryJournal();
  for (const [id, createdAt] of [["e", 5], ["a", 1], ["c", 3], ["d", 3], ["b", 2]] as const) {
    await journal.createSession({ id, createdAt, tools: [] });
  }
  const viewer = createViewer(journal, { operatorToken: OPERATOR });
  const auth = `Bearer ${OPERATOR}`;
  const first = (await get(viewer, "/v1/sessions?limit=2", auth)).body;
  assert.deepEqual(first.sessions.map((session: { id: string }) => session.id), ["e", "c"]);
  await journal.createSession({ id: "z", createdAt: 9, tools: [] });
  const second = (await get(viewer, `/v1/sessions?limit=2&cursor=${encodeURIComponent(first.next)}`, auth)).body;
  assert.deepEqual(second.sessions.map((session: { id: string }) => session.id), ["d", "b"]);
  const third = (await get(viewer, `/v1/sessions?limit=2&cursor=${encodeURIComponent(second.next)}`, auth)).body;
  assert.deepEqual(third, { sessions: [{ id: "a", createdAt: 1, tools: [], head: 0 }] });

  for (const query of ["limit=0", "limit=1001", "limit=x", "limit=1.5", "cursor=nonsense", "cursor=-1:a"]) {
    const { status, body } = await get(viewer, `/v1/sessions?${query}`, auth);
    assert.equal(status, 400, query);
    assert.equal(body.error.code, "invalid_argument", query);
  }
  await journal.close();
});

Deno.test("records page from a sequence; next is absent on the last page", async () => {
  const journal = new MemoryJournal();
  await journal.createSession({ id: "s", createdAt: 1, tools: [] });
  for (let n = 0; n < 5; n++) await journal.append("s", [{ kind: "user_message", content: `m${n}` }]);
  const viewer = createViewer(journal, { operatorToken: OPERATOR });
  const auth = `Bearer ${OPERATOR}`;
  const page = async (query: string) => (await get(viewer, `/v1/sessions/s/records?${query}`, auth)).body;
  const first = await page("from=2&limit=2");
  assert.deepEqual(first.records.map((record: { sequence: number }) => record.sequence), [2, 3]);
  assert.equal(first.next, 4);
  const last = await page("from=4&limit=2");
  assert.deepEqual(last.records.map((record: { content: string }) => record.content), ["m3", "m4"]);
  assert.equal(last.next, undefined, "a full last page has no next");
  assert.deepEqual(await page("from=9"), { records: [] });
  for (const query of ["from=0", "from=-1", "from=abc", "limit=0"]) {
    assert.equal((await get(viewer, `/v1/sessions/s/records?${query}`, auth)).status, 400, query);
  }
  await journal.close();
});

Deno.test("the stream sends each record as it commits, and resumes after Last-Event-ID without gaps or repeats", async () => {
  const journal = new MemoryJournal();
  await journal.createSession({ id: "s", createdAt: 1, tools: [], host: { id: "h", tokenHash: "x" } });
  await journal.append("s", [{ kind: "user_message", content: "one" }, { kind: "user_message", content: "two" }]);
  await using server = serve(createViewer(journal, { operatorToken: OPERATOR }).fetch);
  const headers = { authorization: `Bearer ${OPERATOR}` };

  const first = await fetch(`${server.url}/v1/sessions/s/stream`, { headers });
  assert.equal(first.headers.get("content-type"), "text/event-stream; charset=utf-8");
  const events = serverEvents(first.body!);
  const retry = await events.next();
  assert.ok(!retry.done && retry.value.retry! > 0, "the stream tells the client how soon to reconnect");
  assert.deepEqual((await nextRecord(events)).record.content, "one");
  const second = await nextRecord(events);
  assert.equal(second.id, "2", "the event id is the record's sequence");
  await journal.append("s", [{ kind: "user_message", content: "three" }]);
  const live = await nextRecord(events);
  assert.deepEqual([live.id, live.record.content], ["3", "three"]);
  await events.return(undefined);

  await journal.append("s", [{ kind: "user_message", content: "four" }]);
  const resumed = await fetch(`${server.url}/v1/sessions/s/stream?from=1`, {
    headers: { ...headers, "last-event-id": "2" },
  });
  const again = serverEvents(resumed.body!);
  assert.deepEqual((await nextRecord(again)).record.content, "three", "Last-Event-ID wins over from");
  assert.deepEqual((await nextRecord(again)).record.content, "four");
  await again.return(undefined);

  const fromQuery = await fetch(`${server.url}/v1/sessions/s/stream?from=4`, { headers });
  const later = serverEvents(fromQuery.body!);
  assert.equal((await nextRecord(later)).id, "4");
  await later.return(undefined);

  const bad = await fetch(`${server.url}/v1/sessions/s/stream`, { headers: { ...headers, "last-event-id": "x" } });
  assert.equal(bad.status, 400);
  await bad.body?.cancel();
  await journal.close();
});

Deno.test("a server's open streams end when it shuts down, so shutdown never waits on a browser", async () => {
  const server = await serveBrain({ port: 0, serverToken: OPERATOR });
  await using brain = new Brain({ url: server.url, token: "t", host: "h", serverToken: OPERATOR });
  const session = await brain.sessions.create({ tools: [note()] });
  await session.call("note", { text: "x" });
  const stream = await fetch(`${server.url}/v1/sessions/${session.id}/stream`, {
    headers: { authorization: basic("h", "t") },
  });
  const events = serverEvents(stream.body!);
  assert.equal((await nextRecord(events)).record.kind, "tool_call_started");
  await brain.close();
  await server.shutdown();
  const rest: string[] = [];
  for await (const event of events) rest.push(event.event ?? "");
  assert.deepEqual(rest.filter((kind) => kind !== "record"), [], "the stream ended with no stray events");
});

Deno.test("a viewer over a KV file only reads: an open call stays open and nothing is written", async () => {
  const path = `${scratchDir("viewer_api")}/journal.kv`;
  const writer = await KvJournal.open(path);
  await writer.createSession({ id: "s", createdAt: 1, tools: [] });
  const [started] = await writer.append("s", [{ kind: "tool_call_started", tool: "t", input: {}, activation: "a" }]);
  await writer.close();

  const journal = await KvJournal.open(path);
  try {
    const viewer = createViewer(journal, { operatorToken: OPERATOR });
    const auth = `Bearer ${OPERATOR}`;
    const summary = (await get(viewer, "/v1/sessions/s", auth)).body;
    assert.deepEqual(summary.openCalls, [started.sequence], "the viewer does not end orphaned calls");
    assert.equal((await get(viewer, "/v1/sessions/s/records", auth)).body.records.length, 1);
    assert.equal(await journal.head("s"), 1);
  } finally {
    await journal.close();
  }
});

Deno.test("brain.viewer() is an embedded Brain's; a remote Brain's viewer is its server's", async () => {
  await using brain = new Brain({ url: "http://127.0.0.1:1", token: "t" });
  assert.throws(() => brain.viewer(), hasCode("not_implemented"));
});

/** The permissions of `deno task view`, with reads and writes narrowed to the test's directory. */
const viewPermissions = (dir: string) => [
  "--allow-net=127.0.0.1",
  "--allow-env=BRAIN_SERVER_TOKEN",
  `--allow-read=${dir}`,
  `--allow-write=${dir}`,
];

Deno.test("deno task view serves a KV journal read-only, signs the browser in through its link, and stops on SIGTERM", async () => {
  const dir = scratchDir("viewer_view");
  const path = `${dir}/journal.kv`;
  const writer = await KvJournal.open(path);
  await writer.createSession({ id: "s", createdAt: 1, tools: [] });
  await writer.append("s", [{ kind: "tool_call_started", tool: "t", input: {}, activation: "a" }]);
  const view = denoScript("src/viewer/view.ts", ["--path", path, "--port", "0"], { permissions: viewPermissions(dir) });
  try {
    const link = /^Brain viewer on (http:\/\/127\.0\.0\.1:\d+\/viewer\/)#token=(.+)$/.exec(await view.line() ?? "");
    assert.ok(link, "it printed a sign-in link");
    const origin = new URL(link[1]).origin;
    const stream = await fetch(`${origin}/v1/sessions/s/stream`, {
      headers: { authorization: `Bearer ${decodeURIComponent(link[2])}` },
    });
    const events = serverEvents(stream.body!);
    assert.equal((await nextRecord(events)).record.kind, "tool_call_started");
    await writer.append("s", [{ kind: "user_message", content: "from the writer" }]);
    assert.equal((await nextRecord(events)).record.content, "from the writer", "it follows another process's commits");
    await events.return(undefined);
    assert.deepEqual((await writer.openCalls("s")).map((record) => record.sequence), [1], "the open call stays open");
  } finally {
    assert.equal((await view.kill("SIGTERM")).code, 0, "SIGTERM stops it cleanly");
    await writer.close();
  }
});

Deno.test("deno task view refuses a missing journal file instead of creating one", async () => {
  const dir = scratchDir("viewer_view");
  const view = denoScript("src/viewer/view.ts", ["--path", `${dir}/missing.kv`, "--port", "0"], {
    permissions: viewPermissions(dir),
  });
  assert.equal(await view.line(), undefined);
  assert.equal((await view.process.status).code, 2);
  assert.deepEqual([...Deno.readDirSync(dir)], [], "no file was made");
});
