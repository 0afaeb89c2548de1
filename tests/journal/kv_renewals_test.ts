import assert from "node:assert/strict";
import { KvJournal } from "../../src/journal/kv.ts";
import type { Lease } from "../../src/journal/lease.ts";
import { Ownership } from "../../src/journal/ownership.ts";
import { withDeadline } from "../_support/deadline.ts";
import { hasCode } from "../_support/has_code.ts";
import { scratchDir } from "../_support/scratch.ts";

/** A KV journal on a fresh file whose atomic commits are counted. */
async function countedJournal(): Promise<{ journal: KvJournal; commits: () => number } & AsyncDisposable> {
  const path = `${scratchDir("kv-renewals")}/journal.kv`;
  const kv = await Deno.openKv(path);
  let commits = 0;
  const atomic = kv.atomic.bind(kv);
  kv.atomic = () => {
    commits++;
    return atomic();
  };
  const journal = new KvJournal(kv, path);
  return { journal, commits: () => commits, [Symbol.asyncDispose]: () => journal.close() };
}

async function leased(journal: KvJournal, count: number): Promise<Lease[]> {
  const leases: Lease[] = [];
  for (let index = 0; index < count; index++) {
    await journal.createSession({ id: `s${index}`, createdAt: Date.now(), tools: [] });
    leases.push(await journal.acquire(`s${index}`, { owner: "node", ttlMs: 60_000 }));
  }
  return leases;
}

Deno.test("KvJournal: 250 renewals asked for together share 3 commits of up to 100 fence checks, and each extends its lease", async () => {
  await using counted = await countedJournal();
  const { journal } = counted;
  const leases = await leased(journal, 250);
  const before = counted.commits();
  const renewed = await Promise.all(leases.map((lease) => journal.renew(lease, 120_000)));
  assert.equal(counted.commits() - before, 3);
  for (const [index, lease] of renewed.entries()) {
    assert.ok(lease.expiresAt > leases[index].expiresAt, `lease ${index} was extended`);
    const stored = await journal.holder(lease.sessionId);
    assert.equal(stored?.expiresAt, lease.expiresAt, `lease ${index} is stored`);
  }
});

Deno.test("KvJournal: in a shared renewal commit, only the lease another owner took fails fenced; the others renew", async () => {
  await using counted = await countedJournal();
  const { journal } = counted;
  const leases = await leased(journal, 5);
  await journal.release(leases[2]);
  await journal.acquire("s2", { owner: "other", ttlMs: 60_000 });
  const settled = await Promise.allSettled(leases.map((lease) => journal.renew(lease, 120_000)));
  assert.deepEqual(settled.map((outcome) => outcome.status), [
    "fulfilled",
    "fulfilled",
    "rejected",
    "fulfilled",
    "fulfilled",
  ]);
  await assert.rejects(Promise.reject((settled[2] as PromiseRejectedResult).reason), hasCode("fenced"));
  assert.equal((await journal.holder("s2"))?.owner, "other");
});

Deno.test("Ownership: the renewals of 250 sessions taken one after another come due together and share a few commits", async () => {
  await using counted = await countedJournal();
  const { journal } = counted;
  for (let index = 0; index < 250; index++) {
    await journal.createSession({ id: `s${index}`, createdAt: Date.now(), tools: [] });
  }
  const renewedAll = Promise.withResolvers<void>();
  let renewed = 0;
  const renew = journal.renew.bind(journal);
  journal.renew = async (lease, ttlMs) => {
    const extended = await renew(lease, ttlMs);
    if (++renewed === 250) renewedAll.resolve();
    return extended;
  };
  // Taken one after another, over many milliseconds: their renewals come due at a few points of the lease's grid.
  const owned: Ownership[] = [];
  for (let index = 0; index < 250; index++) {
    owned.push(await Ownership.take(journal, `s${index}`, { owner: "node", ttlMs: 3_000 }));
  }
  const before = counted.commits();
  await withDeadline(renewedAll.promise, "every lease to be renewed once");
  const commits = counted.commits() - before;
  await Promise.all(owned.map((ownership) => ownership.release()));
  assert.ok(commits <= 10, `250 renewals took ${commits} commits`);
});
