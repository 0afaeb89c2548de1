import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { PostgresJournal } from "../../src/journal/postgres.ts";
import { startPostgres } from "../_support/postgres.ts";
import { journalSuite } from "./journal_suite.ts";
import { hasCode } from "../_support/has_code.ts";
import postgres from "postgres";
import { BrainError } from "../../mod.ts";
import { lines } from "../_support/lines.ts";
import { spawnDeno } from "../_support/spawn_deno.ts";
import { withDeadline } from "../_support/deadline.ts";

const pg = await startPostgres();
const schema = () => `t_${crypto.randomUUID().replaceAll("-", "")}`;
const session = (id: string) => ({ id, createdAt: Date.now(), tools: [] });

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

Deno.test("PostgresJournal: an owner paused (SIGSTOP) in the middle of a commit does not hold its session: a successor takes it over, and the paused commit never lands", async () => {
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
  const said = lines(child.stdout);
  try {
    const acknowledged = new Map<number, number>();
    const errors: string[] = [];
    const hear = async () => {
      const { value, done } = await said.next();
      if (done) return false;
      const [word, ...rest] = value.split(" ");
      if (word === "ack") acknowledged.set(Number(rest[0]), Number(rest[1]));
      else errors.push(rest[0]);
      return true;
    };
    // Stopped until one of its connections sits in an open transaction: the owner paused mid-commit, holding the row.
    let paused = false;
    for (let attempt = 0; attempt < 500 && !paused; attempt++) {
      assert.ok(await hear(), "the child appends");
      child.kill("SIGSTOP");
      const [row] = await sql`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE application_name = 'brain' AND state = 'idle in transaction'`;
      paused = row.n > 0;
      if (!paused) child.kill("SIGCONT");
    }
    assert.ok(paused, "the child was never stopped in the middle of a commit");
    // Its lease (500 ms, never renewed) lapses; the takeover waits for no paused transaction.
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
      10_000,
    );
    const [sentinel] = await journal.append("s", [{ kind: "tool_event", call: 0, event: "taken", data: null }], {
      lease,
    });
    child.kill("SIGCONT");
    while (await hear());
    // Woken, the paused owner is refused: its ended transaction, then its lease (postgres.js 3.4.9 may instead crash
    // the process on the connection the database closed; it then stops as a killed owner does).
    assert.ok(
      errors.every((code) => code === "storage_unavailable" || code === "fenced"),
      `the paused owner's appends after the takeover: ${errors}`,
    );
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

Deno.test("PostgresJournal: stop the private PostgreSQL", () => pg.stop());

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}
