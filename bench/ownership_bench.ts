/**
 * What single ownership costs. KV: an append fenced by a lease against the same
 * append without one (which instead checks that no one holds a live lease).
 * PostgreSQL: `PostgresJournal.append` with a lease against a bare fenced
 * INSERT transaction (`UPDATE ... WHERE token = $n RETURNING`, `INSERT`,
 * `pg_notify`) on a private server. Takeover: how long after an owner's death
 * (a lease of 100 ms that is never renewed) another node owns the session,
 * against taking a free one; and how long a Brain server takes to end a dead
 * owner's open call by itself. Run with `deno task bench`.
 */
import postgres from "postgres";
import type { Journal } from "../mod.ts";
import { KvJournal } from "../src/journal/kv.ts";
import type { RecordBody } from "../src/journal/records.ts";
import { Ownership } from "../src/journal/ownership.ts";
import { PostgresJournal } from "../src/journal/postgres.ts";
import { startPostgres } from "../tests/_support/postgres.ts";
import { serveBrain } from "../src/host/server/server.ts";
import { endOrphanedCalls } from "../src/embedded/recover.ts";

const dir = `.tmp/ownership_bench-${crypto.randomUUID()}`;
await Deno.mkdir(dir, { recursive: true });
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));

const body: RecordBody = { kind: "tool_event", call: 1, event: "tick", data: { n: 1, note: "a small event" } };

const kv = await KvJournal.open(`${dir}/journal.kv`);
for (const id of ["free", "leased"]) await kv.createSession({ id, createdAt: Date.now(), tools: [] });
const kvLease = await kv.acquire("leased", { owner: "bench", ttlMs: 3_600_000 });

Deno.bench("KvJournal.append without a lease", { group: "KV append", baseline: true }, async () => {
  await kv.append("free", [body]);
});

Deno.bench("KvJournal.append with a lease (fence checked in the commit)", { group: "KV append" }, async () => {
  await kv.append("leased", [body], { lease: kvLease });
});

const pg = await startPostgres();
const sql = postgres(pg.url, { onnotice: () => {}, max: 4 });
await sql`CREATE TABLE bare_sessions (id text PRIMARY KEY, head bigint NOT NULL, token bigint NOT NULL)`;
await sql`CREATE TABLE bare_records (session_id text, sequence bigint, body text, at bigint, PRIMARY KEY (session_id, sequence))`;
await sql`INSERT INTO bare_sessions VALUES ('s', 0, 1)`;
const text = JSON.stringify(body);
const journal = await PostgresJournal.open(pg.url);
await journal.createSession({ id: "s", createdAt: Date.now(), tools: [] });
const pgLease = await journal.acquire("s", { owner: "bench", ttlMs: 3_600_000 });

Deno.bench("bare fenced INSERT transaction", { group: "PostgreSQL append", baseline: true }, async () => {
  await sql.begin(async (tx) => {
    const [{ head }] = await tx`UPDATE bare_sessions SET head = head + 1 WHERE id = 's' AND token = ${1}
      RETURNING head::float8 AS head`;
    await tx`INSERT INTO bare_records VALUES ('s', ${head}, ${text}, ${Date.now()})`;
    await tx`SELECT pg_notify('bare', 's')`;
  });
});

Deno.bench("PostgresJournal.append with a lease", { group: "PostgreSQL append" }, async () => {
  await journal.append("s", [body], { lease: pgLease });
});

const TAKEOVER_LEASE_MS = 100;
let round = 0;

/** A session whose owner took a lease of `ttlMs` and died: it never renews or releases it. */
async function orphaned(store: Journal, ttlMs: number): Promise<string> {
  const id = `takeover-${round++}`;
  await store.createSession({ id, createdAt: Date.now(), tools: [] });
  if (ttlMs > 0) await store.acquire(id, { owner: "dead", ttlMs });
  return id;
}

for (const [name, store] of [["KV", kv], ["PostgreSQL", journal]] as const) {
  Deno.bench("take a free session", { group: `takeover (${name})`, baseline: true, n: 20 }, async (b) => {
    const id = await orphaned(store, 0);
    b.start();
    const ownership = await Ownership.take(store, id, { owner: "next", ttlMs: 10_000 });
    b.end();
    await ownership.release();
  });

  Deno.bench(
    `take over after the owner died (lease ${TAKEOVER_LEASE_MS} ms)`,
    { group: `takeover (${name})`, n: 20 },
    async (b) => {
      const id = await orphaned(store, TAKEOVER_LEASE_MS);
      b.start();
      const ownership = await Ownership.take(store, id, { owner: "next", ttlMs: 10_000, waitMs: 10_000 });
      b.end();
      await ownership.release();
    },
  );
}

// A Brain server ends a dead owner's open call by itself, with no host reconnecting: how long after the lease
// lapsed, against a node that waits on the lease and takes the session itself. Each has its own KV file.
const waiting = await KvJournal.open(`${dir}/waiting.kv`);
const swept = await KvJournal.open(`${dir}/swept.kv`);
/** Started at the first run of its bench, so its sweeps disturb no other group. */
let server: Promise<unknown> | undefined;

/** A session whose owner died with a lease of {@linkcode TAKEOVER_LEASE_MS} and one call open. */
async function stranded(store: Journal): Promise<string> {
  const id = `stranded-${round++}`;
  await store.createSession({ id, createdAt: Date.now(), tools: [] });
  const lease = await store.acquire(id, { owner: "dead", ttlMs: TAKEOVER_LEASE_MS });
  await store.append(id, [{ kind: "tool_call_started", tool: "t", input: null, activation: "a" }], { lease });
  return id;
}

Deno.bench(
  "a node waiting on the lease ends the call",
  { group: "stranded call (KV)", baseline: true, n: 10 },
  async (b) => {
    const id = await stranded(waiting);
    b.start();
    const ownership = await Ownership.take(waiting, id, { owner: "next", ttlMs: 10_000, waitMs: 10_000 });
    await endOrphanedCalls(ownership.journal, id);
    b.end();
    await ownership.release();
  },
);

Deno.bench(
  "a server's sweep ends the call (server lease 300 ms)",
  { group: "stranded call (KV)", n: 10 },
  async (b) => {
    server ??= serveBrain({ journal: swept, leaseMs: 300, serverToken: "bench" });
    await server;
    const id = await stranded(swept);
    b.start();
    for await (const record of swept.subscribe(id)) if (record.kind === "tool_call_finished") break;
    b.end();
  },
);

globalThis.addEventListener("unload", () => {
  // Deno.bench gives no teardown; the private PostgreSQL stops with the process.
  void sql.end({ timeout: 0 });
});
