import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { PostgresJournal } from "../../src/journal/postgres.ts";
import { JournalSockets, type SocketTarget } from "../../src/journal/postgres_sockets.ts";
import type net from "node:net";
import { startPostgres } from "../_support/postgres.ts";
import { journalSuite } from "./journal_suite.ts";
import { hasCode } from "../_support/has_code.ts";
import postgres from "postgres";
import { BrainError } from "../../mod.ts";
import { lines } from "../_support/lines.ts";
import { spawnDeno } from "../_support/spawn_deno.ts";
import { withDeadline } from "../_support/deadline.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import type { Lease } from "../../src/journal/lease.ts";
import { closing } from "../_support/closing.ts";
import { faultProxy } from "../host/fault_proxy.ts";
import { until } from "../_support/until.ts";
import { assertHostLimitShared, hostSession } from "./host_limit_shared.ts";

const pg = await startPostgres();
const schema = () => `t_${crypto.randomUUID().replaceAll("-", "")}`;
const session = (id: string) => ({ id, createdAt: Date.now(), tools: [] });

/**
 * What an appender child reports, one line each: `ack <sequence> <n>` for an
 * acknowledged record, `error <code>` for a refused append. `hear` takes the
 * next line, false once the child's output ends; `said` is the line reader.
 */
function appenderReports(stdout: ReadableStream<Uint8Array>) {
  const said = lines(stdout);
  const acknowledged = new Map<number, number>();
  const errors: string[] = [];
  const hear = async () => {
    const { value, done } = await said.next();
    if (done) return false;
    const [word, ...rest] = value.split(" ");
    if (word === "ack") acknowledged.set(Number(rest[0]), Number(rest[1]));
    else errors.push(rest.join(" "));
    return true;
  };
  return { said, acknowledged, errors, hear };
}

journalSuite("PostgresJournal", () => PostgresJournal.open(pg.url, { schema: schema() }));

/** Two journals on one fresh schema of the database, as two processes would open it; `await using` closes both. */
async function twoJournals(): Promise<[PostgresJournal, PostgresJournal] & AsyncDisposable> {
  const name = schema();
  const pair: [PostgresJournal, PostgresJournal] = [
    await PostgresJournal.open(pg.url, { schema: name }),
    await PostgresJournal.open(pg.url, { schema: name }),
  ];
  return Object.assign(pair, { [Symbol.asyncDispose]: async () => void await Promise.all(pair.map((j) => j.close())) });
}

Deno.test("PostgresJournal: two journals on one database never take the same sequence, and wake each other", async () => {
  await using journals = await twoJournals();
  const [a, b] = journals;
  await a.createSession(session("s"));
  const seen: number[] = [];
  const controller = new AbortController();
  const following = (async () => {
    for await (const record of b.subscribe("s", { signal: controller.signal })) {
      seen.push(record.sequence);
      if (record.sequence === 60) controller.abort();
    }
  })();
  await Promise.all(
    Array.from({ length: 60 }, (_, call) => (call % 2 ? a : b).append("s", [{ kind: "tool_returned", call }])),
  );
  await following;
  assert.deepEqual(seen, Array.from({ length: 60 }, (_, index) => index + 1), "b followed a's commits via NOTIFY");
  const records = await a.read("s");
  assert.deepEqual(records.map((record) => record.sequence), seen);
  assert.deepEqual(await b.read("s"), records);
});

Deno.test("PostgresJournal: three journals on one database creating one host's sessions at once never pass maxHostSessions", async () => {
  const name = schema();
  const journals = await Promise.all([1, 2, 3].map(() => PostgresJournal.open(pg.url, { schema: name })));
  try {
    await assertHostLimitShared(journals);
  } finally {
    await Promise.all(journals.map((journal) => journal.close()));
  }
});

Deno.test("PostgresJournal: a database written before host counts has its host sessions counted when opened", async () => {
  const name = schema();
  const before = await PostgresJournal.open(pg.url, { schema: name });
  for (const id of ["a", "b", "c"]) await before.createSession(hostSession(id, "h"));
  await before.createSession(hostSession("other", "g"));
  await before.close();
  const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  await sql.unsafe(`DROP TABLE "${name}".brain_host_sessions; DROP FUNCTION "${name}".brain_create_v1`);
  await sql.end();
  await using journal = closing(await PostgresJournal.open(pg.url, { schema: name }));
  await assert.rejects(journal.createSession(hostSession("d", "h"), { maxHostSessions: 3 }), hasCode("limit_exceeded"));
  await journal.createSession(hostSession("d", "h"), { maxHostSessions: 4 });
  await journal.createSession(hostSession("other2", "g"), { maxHostSessions: 2 });
  await journal.deleteSession("a");
  await journal.createSession(hostSession("e", "h"), { maxHostSessions: 4 });
  await assert.rejects(journal.createSession(hostSession("f", "h"), { maxHostSessions: 4 }), hasCode("limit_exceeded"));
});

Deno.test("PostgresJournal: a lease taken over in another journal fences the first one's appends", async () => {
  await using journals = await twoJournals();
  const [a, b] = journals;
  await a.createSession(session("s"));
  const old = await a.acquire("s", { owner: "a", ttlMs: 60_000 });
  await assert.rejects(b.acquire("s", { owner: "b", ttlMs: 1_000 }), hasCode("session_owned"));
  await a.release(old);
  const taken = await b.acquire("s", { owner: "b", ttlMs: 60_000 });
  await assert.rejects(a.append("s", [{ kind: "tool_returned", call: 1 }], { lease: old }), hasCode("fenced"));
  const [record] = await b.append("s", [{ kind: "tool_returned", call: 2 }], { lease: taken });
  assert.equal(record.sequence, 1);
});

Deno.test("PostgresJournal.open: a bad URL or an unreachable database fails with a BrainError", async () => {
  await assert.rejects(PostgresJournal.open("http://example.com"), hasCode("invalid_argument"));
  await assert.rejects(PostgresJournal.open(pg.url, { schema: "Bad-Name" }), hasCode("invalid_argument"));
  const closed = new URL(pg.url);
  closed.port = String(freePort());
  await assert.rejects(PostgresJournal.open(closed.href), hasCode("storage_unavailable"));
});

Deno.test("PostgresJournal: a database out of connections is storage_unavailable, not storage_full", async () => {
  const role = `limited_${crypto.randomUUID().replaceAll("-", "")}`;
  const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 1; GRANT CREATE ON DATABASE postgres TO ${role}`);
    // The schema is created on one connection; listening needs a second, which the database refuses.
    await assert.rejects(
      PostgresJournal.open(pg.url.replace("postgres@", `${role}@`), { schema: schema() }),
      hasCode("storage_unavailable"),
    );
  } finally {
    await sql.end();
  }
});

Deno.test("PostgresJournal.open: a database of an earlier version (no epoch, no commit functions) is upgraded by journals opening it at once, keeps its records, and processes of the previous version keep committing", async () => {
  const name = schema();
  const earlier = await PostgresJournal.open(pg.url, { schema: name });
  await earlier.createSession(session("s"));
  await earlier.append("s", [{ kind: "tool_returned", call: 1 }]);
  await earlier.close();
  const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  await sql.unsafe(`DROP FUNCTION "${name}".brain_commit_v1; DROP FUNCTION "${name}".brain_commit_v2;
    ALTER TABLE "${name}".brain_sessions DROP COLUMN epoch; ALTER TABLE "${name}".brain_records DROP COLUMN commit_id`);
  const journals = await Promise.all([1, 2, 3].map(() => PostgresJournal.open(pg.url, { schema: name })));
  try {
    await Promise.all(journals.map((journal, index) => journal.append("s", [{ kind: "tool_returned", call: index }])));
    assert.deepEqual((await journals[0].read("s")).map((record) => record.sequence), [1, 2, 3, 4]);
    // A process of the previous version commits through brain_commit_v1, as it always did.
    const bodies = JSON.stringify([JSON.stringify({ kind: "tool_returned", call: 9 })]);
    const previous = postgres(pg.url, { max: 1, onnotice: () => {}, connection: { search_path: name } });
    const [{ first }] = await previous.unsafe(
      `SELECT first_sequence::int AS first
        FROM "${name}".brain_commit_v1('s', NULL, NULL, '${bodies}'::json, 0, '{}', '{}', '{}')`,
    );
    await previous.end();
    assert.equal(first, 5);
    assert.equal((await journals[1].append("s", [{ kind: "tool_returned", call: 10 }]))[0].sequence, 6);
    const calls = (await journals[2].read("s", { from: 5 })).map((record) =>
      record.kind === "tool_returned" && record.call
    );
    assert.deepEqual(calls, [9, 10]);
  } finally {
    await sql.end();
    await Promise.all(journals.map((journal) => journal.close()));
  }
});

Deno.test("PostgresJournal.open: journals opening a schema at once take no lock a commit or read in flight holds (no deadlock with them), and all open", async () => {
  const name = schema();
  const first = await PostgresJournal.open(pg.url, { schema: name });
  await first.createSession(session("s"));
  await first.append("s", [{ kind: "tool_call_started", tool: "t", input: null, activation: "a" }]);
  const sql = postgres(pg.url, { max: 1, onnotice: () => {}, connection: { search_path: name } });
  const held = Promise.withResolvers<void>();
  const holding = Promise.withResolvers<void>();
  // A transaction in flight that has read the records and written a session, as a commit or a follower's read does.
  const transaction = sql.begin(async (tx) => {
    await tx`SELECT count(*) FROM brain_records`;
    await tx`UPDATE brain_sessions SET meta = meta WHERE id = 's'`;
    holding.resolve();
    await held.promise;
  });
  const journals: PostgresJournal[] = [];
  try {
    await holding.promise;
    const opening = Array.from({ length: 8 }, () =>
      PostgresJournal.open(pg.url, { schema: name }).then((journal) => {
        journals.push(journal);
        return journal;
      }));
    await withDeadline(Promise.all(opening), "journals to open while a transaction holds the tables");
  } finally {
    held.resolve();
    await transaction;
    await sql.end();
  }
  try {
    await Promise.all(journals.map((journal, index) => journal.append("s", [{ kind: "tool_returned", call: index }])));
    assert.equal(await first.head("s"), journals.length + 1);
  } finally {
    await Promise.all([first, ...journals].map((journal) => journal.close()));
  }
});

Deno.test("PostgresJournal.open: upgrading a schema while another transaction holds its table open does not stop the commits of running journals; it opens once that transaction ends", async () => {
  const name = schema();
  const running = await PostgresJournal.open(pg.url, { schema: name });
  await running.createSession(session("s"));
  const sql = postgres(pg.url, { max: 2, onnotice: () => {}, connection: { search_path: name } });
  // The schema as it was before its lease index.
  await sql`DROP INDEX brain_sessions_leased`;
  const held = Promise.withResolvers<void>();
  const holding = Promise.withResolvers<void>();
  // A transaction that wrote to the sessions table and stays open (an operator's session, a long batch).
  const transaction = sql.begin(async (tx) => {
    await tx`UPDATE brain_sessions SET meta = meta WHERE id = 'none'`;
    holding.resolve();
    await held.promise;
  });
  let upgraded: PostgresJournal | undefined;
  try {
    await holding.promise;
    const opening = PostgresJournal.open(pg.url, { schema: name }).then((journal) => upgraded = journal);
    opening.catch(() => {});
    // The upgrade is waiting for the table's lock.
    for (let waited = 0; waited < 200; waited++) {
      const [{ waiting }] = await sql`SELECT count(*)::int AS waiting FROM pg_stat_activity
        WHERE wait_event_type = 'Lock' AND application_name = 'brain'`;
      if (waiting > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    for (let n = 0; n < 5; n++) {
      const appended = running.append("s", [{ kind: "tool_returned", call: n }]);
      await withDeadline(appended, `commit ${n} while the upgrade waits`, 2_000);
    }
    assert.equal(upgraded, undefined, "the upgrade still waits for the open transaction");
    held.resolve();
    await transaction;
    const journal = await withDeadline(opening, "the upgrade once the transaction ended", 10_000);
    assert.equal((await journal.append("s", [{ kind: "tool_returned", call: 5 }]))[0].sequence, 6);
    const [{ indexed }] = await sql`SELECT to_regclass('brain_sessions_leased') IS NOT NULL AS indexed`;
    assert.equal(indexed, true);
  } finally {
    held.resolve();
    await transaction.catch(() => {});
    await sql.end();
    await upgraded?.close();
    await running.close();
  }
});

Deno.test("PostgresJournal: a row edited to no record, or deleted between others or at the end, fails the read journal_corrupt", async () => {
  const edits: [string, number, string][] = [
    ["a body that is no JSON", 2, `UPDATE brain_records SET body = '{not json' WHERE sequence = 2`],
    ["a body that is a JSON array", 2, `UPDATE brain_records SET body = '[1]' WHERE sequence = 2`],
    ["an unknown kind", 2, `UPDATE brain_records SET body = '{"kind":"zzz"}' WHERE sequence = 2`],
    [
      "a finish of no call",
      3,
      `UPDATE brain_records SET body = '{"kind":"tool_call_finished","call":null}'
      WHERE sequence = 3`,
    ],
    ["a row deleted between others", 2, "DELETE FROM brain_records WHERE sequence = 2"],
    ["the last rows deleted at the session's end", 2, "DELETE FROM brain_records WHERE sequence >= 2"],
  ];
  for (const [what, sequence, edit] of edits) {
    const name = schema();
    const journal = await PostgresJournal.open(pg.url, { schema: name });
    try {
      await journal.createSession(session("s"));
      await journal.append("s", [
        { kind: "tool_call_started", tool: "t", input: null, activation: "a" },
        { kind: "tool_event", call: 1, event: "e", data: 1 },
        { kind: "tool_call_finished", call: 1, cause: "finish", outcome: { status: "ok", value: 1 } },
      ]);
      const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
      await sql.unsafe(`SET search_path = "${name}"; ${edit}`);
      await sql.end();
      await assert.rejects(journal.read("s"), hasCode("journal_corrupt", new RegExp(`record ${sequence} `)), what);
      assert.deepEqual((await journal.read("s", { limit: 1 })).map((record) => record.kind), ["tool_call_started"]);
    } finally {
      await journal.close();
    }
  }
});

Deno.test("PostgresJournal: session metadata edited to no metadata fails journal_corrupt; the session can still be deleted", async () => {
  const name = schema();
  const journal = await PostgresJournal.open(pg.url, { schema: name });
  try {
    await journal.createSession(session("s"));
    const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
    await sql.unsafe(
      `SET search_path = "${name}"; UPDATE brain_sessions SET meta = '{"id":"s","createdAt":1,"tools":5}'`,
    );
    await sql.end();
    await assert.rejects(journal.getSession("s"), hasCode("journal_corrupt", /tools/));
    await assert.rejects(journal.listSessions(), hasCode("journal_corrupt"));
    await journal.deleteSession("s");
    assert.deepEqual(await journal.listSessions(), []);
  } finally {
    await journal.close();
  }
});

Deno.test("PostgresJournal: a read the database ended midway is read again, and the connection's next queries answer rightly", async () => {
  await using journal = closing(await PostgresJournal.open(pg.url, { schema: schema(), maxConnections: 1 }));
  const killer = postgres(pg.url, { max: 1, onnotice: () => {} });
  try {
    await journal.createSession(session("s"));
    const data = "x".repeat(64 * 1024);
    await journal.append("s", Array.from({ length: 200 }, () => ({ kind: "tool_event", call: 0, event: "big", data })));
    let terminated = 0;
    for (let attempt = 0; attempt < 5; attempt++) {
      const reading = journal.read("s").then(() => "read", (error) => error.code);
      let ended = false;
      while (!ended) {
        const [row] = await killer`SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n
          FROM pg_stat_activity WHERE application_name = 'brain' AND query LIKE '%LEFT JOIN brain_records r%'
            AND state = 'active'`;
        terminated += row.n;
        ended = row.n > 0 || (await Promise.race([reading, "reading"])) !== "reading";
      }
      // A read is the same read twice: the one the database ended is read again on a new connection.
      assert.equal(await reading, "read");
      // The first query after is answered too, though postgres.js 3.4.9 fails it unsent with the ended read's error.
      assert.equal(await journal.head("s"), 200);
      assert.equal((await journal.read("s", { from: 199 })).length, 2);
    }
    assert.ok(terminated > 0, "no read was ended midway");
  } finally {
    await killer.end();
  }
});

Deno.test("PostgresJournal: a commit whose connection the database ended mid-statement is sent again, and lands once", async () => {
  const name = schema();
  await using journal = closing(await PostgresJournal.open(pg.url, { schema: name, maxConnections: 1 }));
  const sql = postgres(pg.url, { max: 2, onnotice: () => {} });
  try {
    await journal.createSession(session("s"));
    await journal.append("s", [{ kind: "tool_returned", call: 1 }]);
    for (let round = 0; round < 3; round++) {
      // The session's row is locked elsewhere: the commit is inside its statement when its backend is ended.
      const locked = Promise.withResolvers<void>();
      const unlock = Promise.withResolvers<void>();
      const holding = sql.begin(async (tx) => {
        await tx`SELECT 1 FROM ${sql(name)}.brain_sessions WHERE id = 's' FOR UPDATE`;
        locked.resolve();
        await unlock.promise;
      });
      await locked.promise;
      const blocked = journal.append("s", [{ kind: "tool_returned", call: 2 + round }]);
      let ended = 0;
      while (ended === 0) {
        [{ n: ended }] = await sql`SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n
          FROM pg_stat_activity WHERE application_name = 'brain' AND wait_event_type = 'Lock'`;
      }
      unlock.resolve();
      await holding;
      // Sent again: the ended sending never committed, this one does, once.
      const [record] = await blocked;
      assert.equal(record.sequence, 2 + round);
    }
    assert.deepEqual((await journal.read("s")).map((record) => record.kind === "tool_returned" && record.call), [
      1,
      2,
      3,
      4,
    ]);
  } finally {
    await sql.end();
  }
});

Deno.test("PostgresJournal: a commit whose answer the link lost after the database took it is sent again and answered where it landed, once", async () => {
  const proxy = faultProxy(pg.url.replace("postgres:", "http:"));
  const target = new URL(pg.url);
  target.port = new URL(proxy.url).port;
  await using journal = closing(await PostgresJournal.open(target.href, { schema: schema(), maxConnections: 1 }));
  try {
    await journal.createSession(session("s"));
    // The commit's result (its statement described before, in a round trip of its own) is the next command to
    // complete: the link is cut as its answer arrives, after the database committed it.
    const cut = proxy.trap("SELECT 1", "cut");
    const lost = journal.append("s", [{ kind: "tool_returned", call: 1 }]);
    await cut;
    assert.equal((await lost)[0].sequence, 1, "the commit is answered where it landed");
    const [next] = await journal.append("s", [{ kind: "tool_returned", call: 2 }]);
    assert.equal(next.sequence, 2, "the lost commit landed once");
    assert.deepEqual((await journal.read("s")).map((record) => record.kind === "tool_returned" && record.call), [1, 2]);
  } finally {
    await proxy.close();
  }
});

Deno.test("PostgresJournal: a commit whose answer a link that stays up lost is asked again once the link was silent for answerTimeoutMs, and lands once", async () => {
  const proxy = faultProxy(pg.url.replace("postgres:", "http:"));
  const target = new URL(pg.url);
  target.port = new URL(proxy.url).port;
  await assert.rejects(PostgresJournal.open(pg.url, { answerTimeoutMs: 0 }), hasCode("invalid_argument"));
  await using journal = closing(
    await PostgresJournal.open(target.href, { schema: schema(), maxConnections: 1, answerTimeoutMs: 300 }),
  );
  try {
    await journal.createSession(session("s"));
    // The commit's answer is dropped alone: the link stays up and nothing more comes on it.
    const dropped = proxy.trap("SELECT 1", "drop");
    const lost = journal.append("s", [{ kind: "tool_returned", call: 1 }]);
    await dropped;
    assert.equal((await withDeadline(lost, "the commit whose answer was lost"))[0].sequence, 1);
    assert.equal((await journal.append("s", [{ kind: "tool_returned", call: 2 }]))[0].sequence, 2);
    assert.deepEqual((await journal.read("s")).map((record) => record.kind === "tool_returned" && record.call), [1, 2]);
  } finally {
    await proxy.close();
  }
});

Deno.test("PostgresJournal: a commit inside its statement when the database restarts is sent again once it is back, and lands once", async () => {
  const name = schema();
  await using journal = closing(await PostgresJournal.open(pg.url, { schema: name, maxConnections: 2 }));
  await journal.createSession(session("s"));
  await journal.append("s", [{ kind: "tool_returned", call: 1 }]);
  const sql = postgres(pg.url, { max: 2, onnotice: () => {} });
  const locked = Promise.withResolvers<void>();
  // Holds the session's row until the restart ends its connection: the commit below waits inside its statement.
  const holding = sql.begin(async (tx) => {
    await tx`SELECT 1 FROM ${sql(name)}.brain_sessions WHERE id = 's' FOR UPDATE`;
    locked.resolve();
    await new Promise(() => {});
  }).catch(() => {});
  await locked.promise;
  const blocked = journal.append("s", [{ kind: "tool_returned", call: 2 }]);
  let waiting = 0;
  while (waiting === 0) {
    [{ n: waiting }] = await sql`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE application_name = 'brain' AND wait_event_type = 'Lock'`;
  }
  await pg.restart();
  await holding;
  await sql.end({ timeout: 0 });
  assert.equal((await blocked)[0].sequence, 2);
  assert.equal((await journal.append("s", [{ kind: "tool_returned", call: 3 }]))[0].sequence, 3);
  assert.deepEqual((await journal.read("s")).map((record) => record.kind === "tool_returned" && record.call), [
    1,
    2,
    3,
  ]);
});

Deno.test("PostgresJournal's sockets: a connection whose socket closed with a query's write pending answers its next query, and fails what was given it meanwhile (postgres.js kept the cleared write's timer and never wrote on the connection again)", async () => {
  const sockets = new JournalSockets(10_000);
  let last: net.Socket | undefined;
  const sql = postgres(pg.url, {
    socket: (target: SocketTarget) => (last = sockets.open(target)),
    max: 1,
    fetch_types: false,
    connect_timeout: 10,
    onnotice: () => {},
    backoff: () => 0.01,
  } as postgres.Options<Record<string, never>>);
  try {
    assert.deepEqual([...await sql`SELECT 1 AS one`], [{ one: 1 }]);
    // Its write is scheduled for the next turn; the socket is reset before that turn.
    const doomed = sql`SELECT 2 AS two`;
    last!.destroy(Object.assign(new Error("reset by the test"), { code: "ECONNRESET" }));
    await assert.rejects(doomed, (error: { code?: string }) => error.code === "ECONNRESET");
    // Given the connection before its close reached postgres.js: failed as lost, never left waiting.
    await assert.rejects(
      withDeadline(sql`SELECT 3 AS three`, "the query given the closing connection to fail", 3_000),
      (error: { code?: string }) => error.code === "CONNECTION_CLOSED",
    );
    const next = await withDeadline(sql`SELECT 4 AS four`, "the connection's next query to be answered", 3_000);
    assert.deepEqual([...next], [{ four: 4 }]);
    // A query given the idle connection just as its socket closes: its write is scheduled after the close is.
    const late = Promise.withResolvers<{ code?: string }>();
    const socket = last!, emit = socket.emit as (event: string | symbol, ...args: unknown[]) => boolean;
    socket.emit = ((event: string | symbol, ...args: unknown[]) => {
      const emitted = emit.call(socket, event, ...args);
      if (event === "close") queueMicrotask(() => late.resolve(sql`SELECT 5 AS five`.catch((error) => error)));
      return emitted;
    }) as net.Socket["emit"];
    socket.destroy(Object.assign(new Error("reset by the test"), { code: "ECONNRESET" }));
    assert.equal((await withDeadline(late.promise, "the late query to settle", 3_000)).code, "CONNECTION_CLOSED");
    const after = await withDeadline(sql`SELECT 6 AS six`, "the query after the late one to be answered", 3_000);
    assert.deepEqual([...after], [{ six: 6 }]);
  } finally {
    sockets.close();
    await sql.end({ timeout: 0 });
  }
});

Deno.test("PostgresJournal's sockets: a socket on which nothing is written to connect is reset within seconds, failing the query waiting for it as lost", async () => {
  const sockets = new JournalSockets(10_000);
  const { hostname, port } = new URL(pg.url);
  const socket = sockets.open({ host: [hostname], port: [Number(port)] });
  const reset = Promise.withResolvers<{ code?: string }>();
  socket.once("error", reset.resolve);
  const started = Date.now();
  assert.equal((await withDeadline(reset.promise, "the silent socket to be reset")).code, "ECONNRESET");
  assert.ok(Date.now() - started >= 1_000, "reset only once the turn that writes a startup is long past");
  sockets.close();
});

Deno.test("PostgresJournal: a follower whose LISTEN the database ended mid-statement still sees other processes' commits", async () => {
  const name = schema();
  const proxy = faultProxy(pg.url.replace("postgres:", "http:"));
  const target = new URL(pg.url);
  target.port = new URL(proxy.url).port;
  await using writer = closing(await PostgresJournal.open(pg.url, { schema: name }));
  await using follower = closing(await PostgresJournal.open(target.href, { schema: name }));
  const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  try {
    await writer.createSession(session("s"));
    const tick = (n: number) => writer.append("s", [{ kind: "tool_event", call: 0, event: "tick", data: n }]);
    await tick(1);
    // The LISTEN sent again after the link drops is never answered, and its backend is ended mid-statement:
    // postgres.js 3.4.9 fails the LISTEN it sends on reconnecting, unsent, and then listens no more.
    const dropped = proxy.trap("LISTEN", "drop");
    proxy.cut();
    await dropped;
    let ended = 0;
    while (ended === 0) {
      [{ n: ended }] = await sql`SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n
        FROM pg_stat_activity WHERE application_name = 'brain' AND query ILIKE 'listen%'`;
    }
    // The follower has read the first commit and waits: only a wake shows it the later ones.
    const waiting = Promise.withResolvers<void>();
    const followed = until(
      {
        records: (options) => ({
          async *[Symbol.asyncIterator]() {
            for await (const record of follower.subscribe("s", options)) {
              yield record;
              if (record.sequence === 1) waiting.resolve();
            }
          },
        }),
      },
      (records) => records.length === 3,
      { what: "the commits made after the LISTEN was lost", timeoutMs: 4_000 },
    );
    await waiting.promise;
    await tick(2);
    await tick(3);
    assert.deepEqual((await followed).map((record) => record.sequence), [1, 2, 3]);
  } finally {
    await sql.end();
    await proxy.close();
  }
});

Deno.test("PostgresJournal: 601 renewals asked for together take 2 statements; a lease taken over fails fenced alone, one renewed twice is extended", async () => {
  const name = schema();
  await using journal = closing(await PostgresJournal.open(pg.url, { schema: name }));
  const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  try {
    const leases: Lease[] = [];
    for (let index = 0; index < 600; index++) {
      await journal.createSession(session(`s${index}`));
      leases.push(await journal.acquire(`s${index}`, { owner: "node", ttlMs: 60_000 }));
    }
    await journal.release(leases[7]);
    await journal.acquire("s7", { owner: "other", ttlMs: 60_000 });
    // The database counts the statements that update sessions.
    await sql.unsafe(`SET search_path = "${name}";
      CREATE TABLE updates (n int NOT NULL); INSERT INTO updates VALUES (0);
      CREATE FUNCTION count_update() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN UPDATE updates SET n = n + 1; RETURN NULL; END';
      CREATE TRIGGER counted AFTER UPDATE ON brain_sessions FOR EACH STATEMENT EXECUTE FUNCTION count_update();`);
    // Session s3's lease is renewed twice in the first statement.
    const asked = [leases[3], ...leases];
    const settled = await Promise.allSettled(asked.map((lease) => journal.renew(lease, 120_000)));
    const [{ n }] = await sql`SELECT n FROM ${sql(name)}.updates`;
    assert.equal(n, 2, "601 renewals in statements of up to 500");
    for (const [index, outcome] of settled.entries()) {
      const lease = asked[index];
      if (lease.sessionId === "s7") {
        assert.equal(outcome.status, "rejected");
        await assert.rejects(Promise.reject((outcome as PromiseRejectedResult).reason), hasCode("fenced"));
        continue;
      }
      assert.equal(outcome.status, "fulfilled", `renewal ${index}`);
      const renewed = (outcome as PromiseFulfilledResult<Lease>).value;
      assert.ok(renewed.expiresAt > lease.expiresAt && renewed.token === lease.token, `lease ${index} was extended`);
      assert.equal((await journal.holder(lease.sessionId))?.expiresAt, renewed.expiresAt, `lease ${index} is stored`);
    }
    assert.equal((await journal.holder("s7"))?.owner, "other");
  } finally {
    await sql.end();
  }
});

Deno.test("Brain.open({ url: postgres://... }): Brains in one database share sessions, one owner at a time", async () => {
  const add = tool({
    name: "add",
    description: "Adds.",
    input: z.object({ a: z.number(), b: z.number() }),
    run: ({ a, b }, ctx) => ctx.finish(a + b),
  });
  await using first = await Brain.open({ url: pg.url });
  const session = await first.sessions.create({ id: "brain-pg", tools: [add()] });
  assert.deepEqual((await session.call("add", { a: 1, b: 2 })).outcome, { status: "ok", value: 3 });
  await using second = await Brain.open({ url: pg.url });
  assert.ok((await second.sessions.list()).some((meta) => meta.id === "brain-pg"));
  assert.equal((await (await second.sessions.get("brain-pg")).read()).at(-1)?.kind, "tool_call_finished");
  await assert.rejects(second.sessions.get("brain-pg", { tools: [add()] }), hasCode("session_owned"));
});

Deno.test("a Brain whose call's intent landed though the link lost the commit's answer runs the call once, as committed", async () => {
  const proxy = faultProxy(pg.url.replace("postgres:", "http:"));
  const target = new URL(pg.url);
  target.port = new URL(proxy.url).port;
  await using journal = closing(await PostgresJournal.open(pg.url));
  let dispatched = 0;
  const counted = tool({
    name: "counted",
    description: "Counts its dispatches.",
    input: z.object({}),
    run: (_input, ctx) => (dispatched++, ctx.finish(dispatched)),
  });
  const brain = await Brain.open({ url: target.href, leaseMs: 60_000 });
  try {
    const session = await brain.sessions.create({ id: "lost-intent", tools: [counted()] });
    assert.equal((await session.call("counted", {})).cause, "finish");
    // The intent's commit is the next command to complete: the link is cut as its answer arrives.
    const cut = proxy.trap("SELECT 1", "cut");
    const end = await session.call("counted", {});
    await cut;
    assert.deepEqual(end.outcome, { status: "ok", value: 2 });
    assert.deepEqual(await journal.openCalls("lost-intent"), [], "no call is left open");
  } finally {
    await brain.close();
    await proxy.close();
  }
  const records = await journal.read("lost-intent");
  assert.equal(records.filter((record) => record.kind === "tool_call_started").length, 2, "the intent landed once");
  const ends = records.filter((record) => record.kind === "tool_call_finished");
  assert.deepEqual(ends.map((record) => record.cause), ["finish", "finish"]);
  assert.equal(dispatched, 2, "each call ran once");
});

Deno.test("a Tool's event whose commit landed though the link lost its answer until the resends gave up is answered as committed, once", async () => {
  const proxy = faultProxy(pg.url.replace("postgres:", "http:"));
  const name = schema();
  const target = new URL(pg.url);
  target.port = new URL(proxy.url).port;
  // Links that stay silent are given up after answerTimeoutMs: the journal's resends fail until it gives up.
  const journal = await PostgresJournal.open(target.href, { schema: name, answerTimeoutMs: 300 });
  const failed: string[] = [];
  // The link comes back once the journal gave the commit up as storage_unavailable: the read-back gets through.
  const healing = new Proxy(journal, {
    get(inner, key) {
      if (key !== "append") {
        const value = Reflect.get(inner, key, inner);
        return typeof value === "function" ? value.bind(inner) : value;
      }
      return (...args: Parameters<PostgresJournal["append"]>) =>
        inner.append(...args).catch((error) => {
          failed.push(error.code);
          proxy.heal();
          throw error;
        });
    },
  });
  const emitted = Promise.withResolvers<number>();
  const emitter = tool({
    name: "emitter",
    description: "Emits one event while the link fails.",
    input: z.object({}),
    run: async (_input, ctx) => {
      const cut = proxy.trap("SELECT 1", "cut");
      const sequence = ctx.emit("kept", 1);
      await cut;
      // Before any resend: every link, open or new, goes silent.
      proxy.blackhole();
      await sequence.then(emitted.resolve, emitted.reject);
      return ctx.finish(await sequence);
    },
  });
  const brain = new Brain({ journal: healing, leaseMs: 60_000 });
  try {
    const session = await brain.sessions.create({ id: "lost-event", tools: [emitter()] });
    const ending = session.call("emitter", {}, { timeoutMs: 30_000 });
    const sequence = await emitted.promise;
    const end = await ending;
    assert.deepEqual(failed, ["storage_unavailable"], "the journal gave the commit up");
    assert.deepEqual([end.cause, end.outcome], ["finish", { status: "ok", value: sequence }]);
    const events = (await journal.read("lost-event")).filter((record) => record.kind === "tool_event");
    assert.deepEqual(events.map((record) => record.sequence), [sequence], "the event landed once");
  } finally {
    await brain.close();
    await journal.close();
    await proxy.close();
  }
});

Deno.test("PostgresJournal: an owner paused (SIGSTOP) anywhere in its commits holds no transaction: a successor takes its session over once its lease lapses, and nothing of the paused owner lands after", async () => {
  const name = schema();
  const journal = await PostgresJournal.open(pg.url, { schema: name });
  const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  await journal.createSession(session("s"));
  const child = spawnDeno(
    [
      "run",
      "--quiet",
      "--allow-net=127.0.0.1",
      "--allow-env",
      "--allow-read=.",
      "tests/journal/fixtures/pg_appender.ts",
      pg.url,
      name,
    ],
    { stdout: "piped", stderr: "null" },
  );
  const { said, acknowledged, errors, hear } = appenderReports(child.stdout);
  try {
    // Stopped at twenty points of its commits: at none does it leave a transaction open, holding the session's row.
    for (let pause = 1; pause <= 20; pause++) {
      for (let heard = Math.floor(Math.random() * 3); heard >= 0; heard--) assert.ok(await hear(), "the child appends");
      child.kill("SIGSTOP");
      const [row] = await sql`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE application_name = 'brain' AND state LIKE 'idle in transaction%'`;
      assert.equal(row.n, 0, `the owner paused at point ${pause} holds a transaction open`);
      if (pause < 20) child.kill("SIGCONT");
    }
    // Its lease (500 ms, never renewed) lapses; the takeover waits for no paused transaction (which the database
    // would end only after the child's idleTransactionMs, 5 s).
    const lease = await withDeadline(
      (async () => {
        for (;;) {
          try {
            return await journal.acquire("s", { owner: "next", ttlMs: 60_000 });
          } catch (error) {
            if (!(error instanceof BrainError && error.code === "session_owned")) throw error;
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        }
      })(),
      "the successor's takeover",
      3_000,
    );
    const [sentinel] = await journal.append("s", [{ kind: "tool_event", call: 0, event: "taken", data: null }], {
      lease,
    });
    child.kill("SIGCONT");
    while (await hear());
    // Woken, the paused owner's next append is refused: its lease was taken over.
    assert.deepEqual(errors, ["fenced"], "the paused owner's appends after the takeover");
    const records = await journal.read("s");
    assert.deepEqual(records.map((record) => record.sequence), records.map((_, index) => index + 1));
    assert.equal(records.at(-1)?.sequence, sentinel.sequence, "nothing of the paused owner lands after the takeover");
    for (const [sequence, n] of acknowledged) {
      const record = records[sequence - 1];
      assert.ok(record.kind === "tool_event" && record.data === n, `acknowledged record ${sequence} is kept`);
    }
  } finally {
    // A stopped child hears no SIGTERM: it is killed outright.
    try {
      child.kill("SIGKILL");
    } catch {
      // It has exited.
    }
    await child.status;
    await said.return(undefined);
    await sql.end();
    await journal.close();
  }
});

/** How many of a process's connections the database ends while it commits, in the terminations test. */
const TERMINATIONS = 200;

Deno.test(`PostgresJournal: a process whose connections the database ends ${TERMINATIONS} times while it commits and follows survives, and keeps every acknowledged record; a follower in another process, ended as often, sees each once`, async () => {
  const name = schema();
  const setup = await PostgresJournal.open(pg.url, { schema: name });
  await setup.createSession(session("s"));
  await setup.close();
  // The killer's own connection is not the journal's: only the child's carry application_name 'brain'.
  const killer = postgres(pg.url, { max: 1, onnotice: () => {} });
  await using child = spawnDeno(
    [
      "run",
      "--quiet",
      "--allow-net=127.0.0.1",
      "--allow-env",
      "--allow-read=.",
      "tests/journal/fixtures/pg_storm_appender.ts",
      pg.url,
      name,
    ],
    { stdin: "piped", stdout: "piped", stderr: "inherit" },
  );
  const stderr = Promise.resolve("");
  const { acknowledged, errors, hear } = appenderReports(child.stdout);
  // Another process's follower, whose own connections (LISTEN too) are ended with the child's.
  await using follower = closing(await PostgresJournal.open(pg.url, { schema: name }));
  const seen: number[] = [];
  const following = new AbortController();
  const caughtUp = { at: 0, reached: Promise.withResolvers<void>() };
  const followed = (async () => {
    for await (const record of follower.subscribe("s", { signal: following.signal })) {
      seen.push(record.sequence);
      if (caughtUp.at > 0 && record.sequence >= caughtUp.at) caughtUp.reached.resolve();
    }
  })();
  let terminated = 0;
  try {
    while (terminated < TERMINATIONS) {
      // Ended after 0 to 2 more lines: in the middle of a commit, between two, or while the pool reconnects.
      for (let heard = Math.floor(Math.random() * 3); heard >= 0; heard--) {
        assert.ok(await hear(), `the child died after ${terminated} terminations: ${await stderr}`);
      }
      const [row] = await killer`SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n
        FROM pg_stat_activity WHERE application_name = 'brain'`;
      terminated += row.n;
    }
  } finally {
    await killer.end();
    await child.stdin.close();
  }
  while (await hear());
  const status = await child.status;
  assert.ok(status.success, `the child ended with ${status.code} after ${terminated} terminations: ${await stderr}`);
  assert.ok(
    errors.every((code) => code === "storage_unavailable" || code === "call_finished"),
    `refusals other than a lost connection's: ${errors}`,
  );
  await using journal = closing(await PostgresJournal.open(pg.url, { schema: name }));
  const records = await journal.read("s");
  assert.deepEqual(records.map((record) => record.sequence), records.map((_, index) => index + 1));
  // The follower sees every record once, in order, however often its own connections were ended meanwhile.
  caughtUp.at = records.length;
  if (seen.length < records.length) {
    await withDeadline(
      caughtUp.reached.promise,
      `the follower to see record ${records.length} (it saw ${seen.length})`,
    );
  }
  following.abort();
  await followed;
  assert.deepEqual(seen, records.map((record) => record.sequence), "the follower saw every record once, in order");
  const numberOf = (record: JournalRecord) =>
    record.kind === "tool_call_started"
      ? record.input
      : record.kind === "tool_event"
      ? record.data
      : record.kind === "tool_call_finished" && record.outcome.status === "ok"
      ? record.outcome.value
      : undefined;
  for (const [sequence, n] of acknowledged) {
    assert.equal(numberOf(records[sequence - 1]), n, `acknowledged record ${sequence} is kept`);
  }
  const started = records.filter((record) => record.kind === "tool_call_started");
  assert.equal(new Set(started.map(numberOf)).size, started.length, "no intent landed twice");
  // A call stays open only when its intent landed but its answer was lost with the connection (never acknowledged).
  for (const open of await journal.openCalls("s")) {
    assert.ok(!acknowledged.has(open.sequence), `acknowledged call ${open.sequence} was finished`);
  }
  assert.ok(acknowledged.size > TERMINATIONS / 2, `only ${acknowledged.size} records were acknowledged`);
});

Deno.test("PostgresJournal: stop the private PostgreSQL", () => pg.stop());

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}
