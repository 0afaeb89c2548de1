import assert from "node:assert/strict";
import { BrainError, type Journal } from "../../mod.ts";
import { KvJournal, MemoryJournal } from "../../src/journal/mod.ts";
import { scratchDir } from "../_support/scratch.ts";
import { trap } from "../_support/trap.ts";

const dir = scratchDir("hostile_journal");
const stores: [string, () => Promise<Journal>][] = [
  ["memory", () => Promise.resolve(new MemoryJournal())],
  ["kv", () => KvJournal.open(`${dir}/${crypto.randomUUID()}.kv`)],
];
const boom = () => {
  throw new Error("boom");
};

const misuses: [string, (journal: Journal) => Promise<unknown>][] = [
  ["createSession(Proxy)", (journal) => journal.createSession(trap() as never)],
  ["createSession with a cycle", (journal) => {
    const meta: Record<string, unknown> = { id: "c", createdAt: 1, tools: [] };
    meta.self = meta;
    return journal.createSession(meta as never);
  }],
  ["createSession with a getter that throws", (journal) =>
    journal.createSession({
      id: "g",
      createdAt: 1,
      get tools() {
        return boom();
      },
    } as never)],
  ["createSession without an id", (journal) => journal.createSession({ createdAt: 1, tools: [] } as never)],
  ["updateSession(Proxy)", (journal) => journal.updateSession(trap() as never)],
  ["append(Proxy)", (journal) => journal.append("s", trap() as never)],
  ["append([Proxy])", (journal) => journal.append("s", [trap() as never])],
  ["append a string", (journal) => journal.append("s", "records" as never)],
  ["append an unknown kind", (journal) => journal.append("s", [{ kind: "nope" } as never])],
  ["append a kind __proto__", (journal) => journal.append("s", [{ kind: "__proto__" } as never])],
  ["append null", (journal) => journal.append("s", [null as never])],
  ["read from NaN", (journal) => journal.read("s", { from: NaN })],
  ["read from -1", (journal) => journal.read("s", { from: -1 })],
  ["read limit -1", (journal) => journal.read("s", { limit: -1 })],
  ["read limit 1.5", (journal) => journal.read("s", { limit: 1.5 })],
  ["read limit 1e308", (journal) => journal.read("s", { limit: 1e308 })],
  ["read Proxy options", (journal) => journal.read("s", new Proxy({ from: 1 }, { get: boom }) as never)],
  ["acquire a lease of 1e308 ms", (journal) => journal.acquire("s", { owner: "o", ttlMs: 1e308 })],
  ["acquire a lease of 2^31 ms", (journal) => journal.acquire("s", { owner: "o", ttlMs: 2 ** 31 })],
  ["renew a lease for Infinity ms", async (journal) => {
    const lease = await journal.acquire("s", { owner: "o", ttlMs: 1_000 });
    try {
      return await journal.renew(lease, Infinity);
    } finally {
      await journal.release(lease);
    }
  }],
  ["beat for 1e308 ms", (journal) => journal.beat("n", "http://127.0.0.1:1", 1e308)],
  ["subscribe from 0", async (journal) => {
    for await (const _ of journal.subscribe("s", { from: 0, signal: AbortSignal.timeout(1_000) })) return;
  }],
  ["subscribe a signal that is none", async (journal) => {
    for await (const _ of journal.subscribe("s", { signal: "stop" as never })) return;
  }],
];

Deno.test("hostile journal calls: Proxies, unknown kinds, cycles and bad ranges are refused invalid_argument, nothing written", async () => {
  for (const [store, open] of stores) {
    const journal = await open();
    try {
      await journal.createSession({ id: "s", createdAt: 1, tools: [] } as never);
      const [first] = await journal.append("s", [{ kind: "user_message", content: "kept" }]);
      const codes = [];
      for (const [what, misuse] of misuses) {
        codes.push(
          `${what}: ${await misuse(journal).then(
            () => "accepted",
            (error) => error instanceof BrainError ? error.code : `a bare ${error}`,
          )}`,
        );
      }
      assert.deepEqual(codes, misuses.map(([what]) => `${what}: invalid_argument`), store);
      assert.deepEqual((await journal.read("s")).map((record) => record.sequence), [first.sequence], store);
      assert.deepEqual((await journal.listSessions()).map((meta) => meta.id), ["s"], store);
    } finally {
      await journal.close();
    }
  }
});
