import assert from "node:assert/strict";
import { KvJournal } from "../../src/journal/kv.ts";
import { dropBlob, sweptMarkers, writeBlob } from "../../src/journal/kv_blobs.ts";
import { keys } from "../../src/journal/kv_codec.ts";
import { scratchDir } from "../_support/scratch.ts";
import { hasCode } from "../_support/has_code.ts";

const dir = scratchDir("kv_blobs_test");
const file = () => `${dir}/${crypto.randomUUID()}.kv`;

/** Every chunk and pending-marker key of `session` on the file. */
async function blobKeys(kv: Deno.Kv, session: string): Promise<Deno.KvKey[]> {
  const found: Deno.KvKey[] = [];
  for (const prefix of [["chunk", session], keys.pendings(session)]) {
    for await (const entry of kv.list({ prefix })) found.push(entry.key);
  }
  return found;
}

/**
 * `kv`, except that the `nth` atomic commit first runs `before` on the real
 * database; every other call goes straight through.
 */
function beforeCommit(kv: Deno.Kv, nth: number, before: () => Promise<void>): Deno.Kv {
  let commits = 0;
  return new Proxy(kv, {
    get(target, property) {
      if (property !== "atomic") {
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      }
      return () => {
        const op = target.atomic();
        if (++commits !== nth) return op;
        return new Proxy(op, {
          get(operation, name) {
            const value = Reflect.get(operation, name, operation);
            if (name === "commit") return async () => (await before(), operation.commit());
            return typeof value === "function" ? value.bind(operation) : value;
          },
        });
      };
    },
  });
}

Deno.test("writeBlob: a sweep that begins between two chunk batches stops the writer, and no chunk is left behind", async () => {
  const kv = await Deno.openKv(file());
  try {
    const swept = beforeCommit(kv, 2, async () => {
      const [marker] = await Array.fromAsync(kv.list({ prefix: keys.pendings("s") }));
      await dropBlob(kv, "s", marker.key.at(-1) as string);
    });
    await assert.rejects(writeBlob(swept, "s", new Uint8Array(1_500_000)), hasCode("journal_conflict"));
    assert.deepEqual(await blobKeys(kv, "s"), [], "the first batch's chunks are gone, the second was never written");
  } finally {
    kv.close();
  }
});

Deno.test("sweptMarkers: a marker stands until a sweep begins, and the sweep moves the head a commit checks", async () => {
  const kv = await Deno.openKv(file());
  try {
    await kv.set(keys.head("s"), { sequence: 0, epoch: "e" });
    const written = await writeBlob(kv, "s", new Uint8Array(200_000));
    const before = (await kv.get(keys.head("s"))).versionstamp;
    assert.deepEqual(await sweptMarkers(kv, "s", before, [written.marker]), new Set());
    await dropBlob(kv, "s", written.stored.chunks);
    assert.equal(await sweptMarkers(kv, "s", before, [written.marker]), undefined, "the head moved");
    const after = (await kv.get(keys.head("s"))).versionstamp;
    assert.notEqual(after, before);
    assert.deepEqual(await kv.get(keys.head("s")).then((entry) => entry.value), { sequence: 0, epoch: "e" });
    assert.deepEqual(await sweptMarkers(kv, "s", after, [written.marker]), new Set([written.marker]));
    assert.deepEqual(await blobKeys(kv, "s"), []);
  } finally {
    kv.close();
  }
});

for (const when of ["before the append reads its markers", "after it read them, before it commits"]) {
  Deno.test(`KvJournal: a large record whose chunks are swept ${when} is refused journal_conflict, and nothing of it stays`, async () => {
    const path = file();
    const kv = await Deno.openKv(path);
    let sweep = async () => {
      const [marker] = await Array.fromAsync(kv.list({ prefix: keys.pendings("s") }));
      sweep = () => Promise.resolve();
      await dropBlob(kv, "s", marker.key.at(-1) as string);
    };
    const spied = new Proxy(kv, {
      get(target, property) {
        const value = Reflect.get(target, property, target);
        if (property !== "getMany") return typeof value === "function" ? value.bind(target) : value;
        return async (list: Deno.KvKey[]) => {
          const readsMarkers = list.some((key) => key[0] === keys.pendings()[0]);
          if (readsMarkers && when.startsWith("before")) await sweep();
          const entries = await target.getMany(list);
          if (readsMarkers) await sweep();
          return entries;
        };
      },
    });
    const journal = new KvJournal(spied, path);
    try {
      await journal.createSession({ id: "s", createdAt: Date.now(), tools: [] });
      const [small] = await journal.append("s", [{ kind: "tool_event", call: 1, event: "small", data: 1 }]);
      await assert.rejects(
        journal.append("s", [{ kind: "tool_event", call: 1, event: "big", data: "z".repeat(300_000) }]),
        hasCode("journal_conflict"),
      );
      assert.deepEqual(await journal.read("s"), [small]);
      assert.deepEqual(await blobKeys(kv, "s"), []);
      const [next] = await journal.append("s", [{ kind: "tool_event", call: 1, event: "next", data: 2 }]);
      assert.equal(next.sequence, 2, "the session goes on");
    } finally {
      await journal.close();
    }
  });
}
