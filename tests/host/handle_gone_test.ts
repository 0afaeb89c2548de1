import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainError, type HostConnectionEvent, tool } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { FlakyJournal, stalledLeases } from "../_support/flaky_journal.ts";
import { startPostgres } from "../_support/postgres.ts";
import { hanging } from "../_support/model_askers.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import type { Journal } from "../../src/journal/journal.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { PostgresJournal } from "../../src/journal/postgres.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { scratchDir } from "../_support/scratch.ts";
import { withDeadline } from "../_support/deadline.ts";
import { journalRecords, until } from "../_support/until.ts";
import { DEFAULT_BUDGETS, rawHost } from "./raw_host.ts";

const dir = scratchDir("handle_gone_test");
const SERVER_TOKEN = "operator-secret";
const TOKEN = "gone-token";

/** A Tool that runs until its call is aborted, handing over the abort's reason. */
function waiting() {
  const started = Promise.withResolvers<void>();
  const aborted = Promise.withResolvers<unknown>();
  const declared = tool({
    name: "wait",
    description: "Runs until its call ends.",
    input: z.object({}),
    run: (_input, ctx) => {
      started.resolve();
      ctx.signal.addEventListener("abort", () => aborted.resolve(ctx.signal.reason), { once: true });
    },
  });
  return { started: started.promise, aborted: aborted.promise, placed: () => declared() };
}

/** A Tool that holds until `release` resolves, then finishes. */
function holding() {
  const started = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const declared = tool({
    name: "hold",
    description: "Holds until released.",
    input: z.object({}),
    run: async (_input, ctx) => {
      started.resolve();
      await release.promise;
      return ctx.finish("held");
    },
  });
  return { started: started.promise, release, placed: () => declared() };
}

const quick = tool({
  name: "quick",
  description: "Finishes at once.",
  input: z.object({}),
  run: (_input, ctx) => ctx.finish("quick"),
});

/** A client of `url` as host `app`, whose `session_closed` events resolve `closed` in turn. */
function client(url: string) {
  const events: HostConnectionEvent[] = [];
  const closed = Promise.withResolvers<HostConnectionEvent>();
  const brain = new Brain({
    url,
    token: TOKEN,
    host: "app",
    serverToken: SERVER_TOKEN,
    onConnection: (event) => {
      events.push(event);
      if (event.type === "session_closed") closed.resolve(event);
    },
  });
  return { brain, events, closed: () => withDeadline(closed.promise, "the session_closed event") };
}

const terminals = (records: JournalRecord[], call: number) =>
  records.filter((record) => record.kind === "tool_call_finished" && record.call === call);

/** Where a journal is: a KV file or a PostgreSQL database. */
type Store = { path: string } | { url: string };

/** A new store of `kind` for one test; `await using` stops a PostgreSQL. */
async function store(kind: "kv" | "postgres"): Promise<Store & AsyncDisposable> {
  if (kind === "kv") return { path: `${dir}/${crypto.randomUUID()}.kv`, [Symbol.asyncDispose]: async () => {} };
  const postgres = await startPostgres();
  return { url: postgres.url, [Symbol.asyncDispose]: () => postgres.stop() };
}

/** The journal of `where`, opened as a Brain opens it. */
function openJournal(where: Store): Promise<Journal> {
  return "path" in where ? KvJournal.open(where.path) : PostgresJournal.open(where.url);
}

/** Takes session `id` of host `app` over from the server, in another Brain over the same journal. */
async function takeOver(where: Store, id: string) {
  const other = await Brain.open("path" in where ? { path: where.path } : { url: where.url });
  await other.sessions.get(hostSessionKey("app", id), {
    tools: [waiting().placed()],
    host: { id: "app", token: TOKEN },
    waitMs: 5_000,
  });
  return other;
}

Deno.test("a server whose store refuses a call's end for good: the remote caller fails at once as embedded, and the handle is given up", async () => {
  const journal = await FlakyJournal.at(`${dir}/${crypto.randomUUID()}.kv`);
  await using server = await servedBrain({ journal, serverToken: SERVER_TOKEN });
  const { brain, closed } = client(server.url);
  await using _ = brain;
  const hold = holding();
  const session = await brain.sessions.create({ tools: [hold.placed()] });
  const kept = await brain.sessions.create({ tools: [quick()] });
  const call = await session.start("hold", {});
  await hold.started;
  // The call's terminal commit and its 4 retries fail, then the server's first sweep; the next one commits.
  journal.failures = 6;
  hold.release.resolve();
  await assert.rejects(withDeadline(call.ended, "the call's end"), hasCode("storage_unavailable"));
  const event = await closed();
  assert.deepEqual([event.session, event.url, event.error?.code], [session.id, server.url, "session_closed"]);
  assert.equal((event.error?.cause as BrainError).code, "storage_unavailable");
  await assert.rejects(session.start("hold", {}), hasCode("session_closed", /given up/));
  await assert.rejects(session.call("hold", {}), hasCode("session_closed", /given up/));
  await assert.rejects(session.send("hello"), hasCode("session_closed", /given up/));
  await session.end();
  assert.deepEqual((await kept.call("quick", {})).outcome, { status: "ok", value: "quick" }, "the other handle serves");
  // No call is left open: once the store is back the server ends it unknown, once.
  const records = await until(
    journalRecords(journal, hostSessionKey("app", session.id)),
    (seen) => terminals(seen, call.sequence).length > 0,
    "the call's end",
  );
  const [end] = terminals(records, call.sequence);
  assert.ok(end.kind === "tool_call_finished" && end.cause === "unknown");
});

for (const kind of ["kv", "postgres"] as const) {
  Deno.test(`over ${kind}: a session another Brain takes over: the client is told at once, its running call is aborted and its caller fails fenced`, async () => {
    await using where = await store(kind);
    const leases = stalledLeases(await openJournal(where));
    await using server = await servedBrain({
      journal: leases.journal,
      serverToken: SERVER_TOKEN,
      leaseMs: 300,
      models: { default: { provider: new ScriptedProvider([hanging()]), model: "fixed" } },
    });
    const { brain, events, closed } = client(server.url);
    await using _ = brain;
    const wait = waiting();
    const session = await brain.sessions.create({ tools: [wait.placed()], model: "default" });
    const call = await session.start("wait", {});
    await wait.started;
    const sending = session.send("hello");
    sending.catch(() => {});
    // The server's store stops renewing its lease; another Brain takes the session once it lapsed.
    leases.stalled = true;
    await using other = await takeOver(where, session.id);
    leases.stalled = false;
    const event = await closed();
    assert.deepEqual([event.session, event.error?.code], [session.id, "session_closed"]);
    assert.equal((event.error?.cause as BrainError).code, "fenced");
    assert.ok(await withDeadline(wait.aborted, "the running call's abort"), "the Tool's signal aborted");
    await assert.rejects(withDeadline(call.ended, "the call's end"), hasCode("fenced"));
    await assert.rejects(
      withDeadline(sending, "the message's reply"),
      hasCode("fenced"),
      "the Agentloop's message fails too",
    );
    await assert.rejects(session.call("wait", {}), hasCode("session_closed"));
    assert.deepEqual(events.map((event) => event.type), ["attached", "session_closed"], "the host stayed connected");
    // The new owner ended the call unknown; the old one wrote nothing after it.
    const records = await (await other.sessions.get(hostSessionKey("app", session.id))).read();
    const ends = terminals(records, call.sequence).map((record) =>
      record.kind === "tool_call_finished" && record.cause
    );
    assert.deepEqual(ends, ["unknown"]);
  });

  Deno.test(`over ${kind}: a session another client deletes: the client's handle ends session_closed caused by session_not_found`, async () => {
    await using where = await store(kind);
    await using server = await servedBrain({ ...where, serverToken: SERVER_TOKEN, leaseMs: 300 });
    const { brain, closed } = client(server.url);
    await using _ = brain;
    const wait = waiting();
    const session = await brain.sessions.create({ tools: [wait.placed()] });
    const call = await session.start("wait", {});
    await wait.started;
    {
      await using other = await Brain.open("path" in where ? { path: where.path } : { url: where.url });
      await other.sessions.delete(hostSessionKey("app", session.id));
    }
    const event = await closed();
    assert.deepEqual([event.session, event.error?.code], [session.id, "session_closed"]);
    assert.equal((event.error?.cause as BrainError).code, "session_not_found");
    await withDeadline(wait.aborted, "the running call's abort");
    await assert.rejects(withDeadline(call.ended, "the call's end"), hasCode("fenced"), "as an embedded caller's");
    await assert.rejects(session.start("wait", {}), hasCode("session_closed", /deleted/));
    assert.deepEqual(await brain.sessions.list(), []);
  });
}

Deno.test("a client of protocol 1 is sent no failed end: it hears the end the session's next owner committed", async () => {
  const where = { path: `${dir}/${crypto.randomUUID()}.kv` };
  const leases = stalledLeases(await openJournal(where));
  await using server = await servedBrain({ journal: leases.journal, serverToken: SERVER_TOKEN, leaseMs: 300 });
  const raw = await rawHost(server.url, "app", TOKEN, SERVER_TOKEN);
  raw.socket.send(JSON.stringify({ id: 1, op: "attach", handles: [] }));
  await raw.next();
  const advertised = { ...waiting().placed().advertised };
  raw.socket.send(JSON.stringify({ id: 2, op: "create", handle: "h", session: "s", tools: [advertised] }));
  assert.deepEqual(await raw.next(), { t: "reply", id: 2, value: DEFAULT_BUDGETS });
  raw.socket.send(JSON.stringify({ id: 3, op: "start", handle: "h", tool: "wait", input: {} }));
  const started = await raw.next() as { value: { call: number; run?: true } };
  assert.equal(started.value.run, true, "this host runs the call");
  leases.stalled = true;
  await using _other = await takeOver(where, "s");
  leases.stalled = false;
  const ended = await withDeadline(nextOf(raw, "ended"), "the call's ended push") as {
    call: number;
    end?: { cause: string };
  };
  assert.deepEqual([ended.call, ended.end?.cause], [started.value.call, "unknown"]);
  raw.socket.close();
  await raw.closed;
});

/** The next frame of type `type` a raw host receives. */
async function nextOf(raw: Awaited<ReturnType<typeof rawHost>>, type: string): Promise<unknown> {
  for (;;) {
    const frame = await raw.next() as { t: string };
    if (frame.t === type) return frame;
  }
}

/** A server speaking the protocol by hand: `answer` gets each request frame and a way to send one message. */
function handwritten(
  answer: (frame: { id: number; op: string; handle?: string }, send: (frames: object[]) => void) => void,
) {
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const { socket, response } = Deno.upgradeWebSocket(request);
    const send = (frames: object[]) => socket.send(JSON.stringify(frames));
    socket.onmessage = ({ data }) => {
      const parsed = JSON.parse(data);
      for (const frame of Array.isArray(parsed) ? parsed : [parsed]) {
        if (frame.op === "attach") send([{ t: "reply", id: frame.id, value: { failed: [] } }]);
        else if (frame.op === "end") send([{ t: "reply", id: frame.id, value: null }]);
        else if (frame.id !== undefined) answer(frame, send);
      }
    };
    return response;
  });
  return { url: `http://127.0.0.1:${http.addr.port}`, [Symbol.asyncDispose]: () => http.shutdown() };
}

Deno.test("a gone push in the batch that answers the handle's create ends the handle as soon as the client holds it", async () => {
  await using server = handwritten((frame, send) => {
    if (frame.op !== "create") return;
    const gone = { t: "gone", handle: frame.handle, error: { code: "fenced", message: "taken over" } };
    send([{ t: "reply", id: frame.id, value: DEFAULT_BUDGETS }, gone]);
  });
  const { brain, closed } = client(server.url);
  await using _ = brain;
  const session = await brain.sessions.create({ tools: [quick()] });
  const event = await closed();
  assert.deepEqual([event.session, (event.error?.cause as BrainError).code], [session.id, "fenced"]);
  await assert.rejects(session.call("quick", {}), hasCode("session_closed", /taken over/));
});

Deno.test("a failed end pushed with its start's reply fails the caller, whose activation takes the usage it carries", async () => {
  let session = "";
  await using server = handwritten((frame, send) => {
    if (frame.op === "create") send([{ t: "reply", id: frame.id, value: DEFAULT_BUDGETS }]);
    if (frame.op !== "start") return;
    const error = { code: "storage_unavailable", message: "the disk went away" };
    const usage = { emittedBytes: 7, modelCalls: 1 };
    send([{ t: "reply", id: frame.id, value: { call: 1 } }, { t: "ended", session, call: 1, error, usage }]);
  });
  const { brain } = client(server.url);
  await using _ = brain;
  const opened = await brain.sessions.create({ tools: [quick()] });
  session = opened.id;
  const activation = opened.activation();
  const call = await opened.start("quick", {}, { activation, signal: new AbortController().signal });
  await assert.rejects(withDeadline(call.ended, "the call's end"), hasCode("storage_unavailable"));
  assert.deepEqual([activation.emittedBytes, activation.modelCalls], [7, 1]);
});
