import assert from "node:assert/strict";
import type { Journal } from "../../src/journal/journal.ts";
import {} from "../../mod.ts";
import { hasCode } from "../_support/has_code.ts";

/** Registers the behaviour every Journal must have; `open` gives a fresh, empty journal. */
export function journalSuite(name: string, open: () => Promise<Journal>): void {
  const withJournal = (fn: (journal: Journal) => Promise<void>) => async () => {
    const journal = await open();
    try {
      await fn(journal);
    } finally {
      await journal.close();
    }
  };
  const session = (id: string) => ({ id, createdAt: Date.now(), tools: [] });

  Deno.test(
    `${name}: sequences are dense and strictly increasing from 1`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const first = await journal.append("s", [{ kind: "tool_returned", call: 1 }, { kind: "tool_returned", call: 2 }]);
      const second = await journal.append("s", [{ kind: "tool_returned", call: 3 }]);
      assert.deepEqual([...first, ...second].map((record) => record.sequence), [1, 2, 3]);
      assert.equal(await journal.head("s"), 3);
      assert.deepEqual((await journal.read("s", { from: 2 })).map((record) => record.sequence), [2, 3]);
      assert.deepEqual((await journal.read("s", { from: 1, limit: 1 })).map((record) => record.sequence), [1]);
    }),
  );

  Deno.test(
    `${name}: listSessions lists every session in id order, whatever order they were created in`,
    withJournal(async (journal) => {
      for (const id of ["b", "a", "c", "B", "a-1", "a.b", "a~x"]) await journal.createSession(session(id));
      assert.deepEqual((await journal.listSessions()).map((meta) => meta.id), [
        "B",
        "a",
        "a-1",
        "a.b",
        "a~x",
        "b",
        "c",
      ]);
    }),
  );

  Deno.test(
    `${name}: reading from past the last record, or from an empty session, is an empty list`,
    withJournal(async (journal) => {
      await journal.createSession(session("empty"));
      assert.deepEqual(await journal.read("empty", { from: 5 }), []);
      await journal.createSession(session("s"));
      await journal.append("s", [{ kind: "tool_returned", call: 1 }, { kind: "tool_returned", call: 2 }]);
      for (const from of [3, 4, 99]) assert.deepEqual(await journal.read("s", { from }), [], `from ${from}`);
      assert.deepEqual(await journal.read("s", { from: 99, limit: 1 }), []);
    }),
  );

  Deno.test(
    `${name}: sessions keep separate sequences`,
    withJournal(async (journal) => {
      await journal.createSession(session("a"));
      await journal.createSession(session("b"));
      await journal.append("a", [{ kind: "tool_returned", call: 1 }]);
      const [record] = await journal.append("b", [{ kind: "tool_returned", call: 1 }]);
      assert.equal(record.sequence, 1);
      assert.equal(record.sessionId, "b");
    }),
  );

  Deno.test(
    `${name}: concurrent appends never share a sequence`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      await Promise.all(
        Array.from({ length: 50 }, (_, call) => journal.append("s", [{ kind: "tool_returned", call }])),
      );
      const records = await journal.read("s");
      assert.deepEqual(records.map((record) => record.sequence), Array.from({ length: 50 }, (_, index) => index + 1));
      assert.equal(new Set(records.map((record) => (record as { call: number }).call)).size, 50);
    }),
  );

  Deno.test(
    `${name}: committed records cannot be changed by the writer`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const body = { kind: "tool_event" as const, call: 1, event: "e", data: { n: 1 } };
      await journal.append("s", [body]);
      body.data.n = 2;
      const [record] = await journal.read("s");
      assert.deepEqual((record as { data: unknown }).data, { n: 1 });
    }),
  );

  Deno.test(
    `${name}: a record that is not JSON is refused with invalid_argument and commits nothing of its append`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      for (const data of [{ when: new Date(0) }, [1n], { n: NaN }, { f: () => 1 }]) {
        await assert.rejects(
          journal.append("s", [
            { kind: "tool_returned", call: 1 },
            { kind: "tool_event", call: 1, event: "e", data: data as never },
          ]),
          hasCode("invalid_argument", /\$\.data/),
        );
      }
      assert.equal(await journal.head("s"), 0);
      const [started] = await journal.append("s", [{
        kind: "tool_call_started",
        tool: "t",
        input: null,
        activation: "a",
      }]);
      await assert.rejects(
        journal.append("s", [{
          kind: "tool_call_finished",
          call: started.sequence,
          cause: "finish",
          outcome: { status: "ok", value: 1n as never },
        }]),
        hasCode("invalid_argument"),
      );
      assert.deepEqual((await journal.openCalls("s")).map((open) => open.sequence), [started.sequence], "still open");
      await journal.append("s", [{
        kind: "tool_call_finished",
        call: started.sequence,
        cause: "finish",
        outcome: { status: "ok", value: 1 },
      }]);
      assert.deepEqual(await journal.openCalls("s"), []);
      const [record] = await journal.append("s", [{
        kind: "tool_result",
        call: 1,
        outcome: { status: "ok", value: 1 },
        content: undefined,
      }]);
      assert.equal("content" in record, false, "an undefined field is left out, as JSON leaves it out");
    }),
  );

  Deno.test(
    `${name}: records of one commit keep equal values apart from the writer's and are frozen to the leaves`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const outcome = { status: "ok" as const, value: { list: [{ deep: 1 }] } };
      const [call] = await journal.append("s", [{
        kind: "tool_call_started",
        tool: "t",
        input: null,
        activation: "a",
      }]);
      const [result, finished] = await journal.append("s", [
        { kind: "tool_result", call: call.sequence, outcome },
        { kind: "tool_call_finished", call: call.sequence, cause: "finish", outcome },
      ]);
      outcome.value.list[0].deep = 2;
      for (const record of [result, finished, ...await journal.read("s", { from: 2 })]) {
        const kept = (record as unknown as { outcome: typeof outcome }).outcome;
        assert.deepEqual(kept, { status: "ok", value: { list: [{ deep: 1 }] } });
        assert.ok(Object.isFrozen(record) && Object.isFrozen(kept.value.list[0]));
      }
    }),
  );

  Deno.test(
    `${name}: subscribe yields history, then each commit, from a sequence`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      await journal.append("s", [{ kind: "tool_returned", call: 1 }, { kind: "tool_returned", call: 2 }]);
      const controller = new AbortController();
      const seen: number[] = [];
      const following = (async () => {
        for await (const record of journal.subscribe("s", { from: 2, signal: controller.signal })) {
          seen.push(record.sequence);
          if (record.sequence === 4) controller.abort();
        }
      })();
      await journal.append("s", [{ kind: "tool_returned", call: 3 }]);
      await journal.append("s", [{ kind: "tool_returned", call: 4 }]);
      await following;
      assert.deepEqual(seen, [2, 3, 4]);
    }),
  );

  Deno.test(
    `${name}: a subscriber sees a record only after its commit resolves`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const controller = new AbortController();
      const first = (async () => {
        for await (const record of journal.subscribe("s", { signal: controller.signal })) {
          controller.abort();
          return record;
        }
      })();
      const [committed] = await journal.append("s", [{ kind: "tool_returned", call: 9 }]);
      assert.deepEqual(await first, committed);
    }),
  );

  Deno.test(
    `${name}: closing while a subscription is reading ends it quietly, after what it read`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      await journal.append("s", Array.from({ length: 20 }, (_, call) => ({ kind: "tool_returned" as const, call })));
      const followers = Array.from({ length: 5 }, async () => {
        const seen: number[] = [];
        for await (const record of journal.subscribe("s")) seen.push(record.sequence);
        return seen;
      });
      await journal.close();
      for (const seen of await Promise.all(followers)) {
        assert.deepEqual(seen, seen.length ? Array.from({ length: 20 }, (_, index) => index + 1) : []);
      }
    }),
  );

  Deno.test(
    `${name}: close() called again while the journal closes settles once it has closed`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const appended = journal.append("s", [{ kind: "tool_returned", call: 1 }]);
      appended.catch(() => {});
      const closes = [journal.close(), journal.close()];
      const settled: number[] = [];
      closes.forEach((closing, index) => closing.then(() => settled.push(index)));
      await closes[1];
      assert.deepEqual(settled, [0, 1], "the first close() had settled when the later one did");
    }),
  );

  Deno.test(
    `${name}: an append made before close() is committed; one made after fails journal_closed`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      await journal.append("s", [{ kind: "tool_returned", call: 1 }]);
      const before = journal.append("s", [{ kind: "tool_returned", call: 2 }]);
      before.catch(() => {});
      const closing = journal.close();
      await assert.rejects(journal.append("s", [{ kind: "tool_returned", call: 3 }]), hasCode("journal_closed"));
      await closing;
      assert.equal((await before)[0].sequence, 2);
    }),
  );

  Deno.test(
    `${name}: close ends subscriptions and refuses later calls`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const following = (async () => {
        const seen = [];
        for await (const record of journal.subscribe("s")) seen.push(record);
        return seen;
      })();
      // The subscription's first read starts synchronously above, so close meets it in flight or waiting.
      await journal.close();
      assert.deepEqual(await following, []);
      await assert.rejects(
        journal.read("s"),
        hasCode("journal_closed"),
      );
    }),
  );

  Deno.test(
    `${name}: close ends a follower quietly after it has seen the latest commit`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      await journal.append("s", [{ kind: "user_message", content: "hi" }]);
      const seen = Promise.withResolvers<void>();
      const following = (async () => {
        const kinds = [];
        for await (const record of journal.subscribe("s")) {
          kinds.push(record.kind);
          seen.resolve();
        }
        return kinds;
      })();
      await seen.promise;
      await journal.close();
      assert.deepEqual(await following, ["user_message"]);
    }),
  );

  Deno.test(
    `${name}: session metadata round-trips; duplicates and unknown ids fail`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      await assert.rejects(
        journal.createSession(session("s")),
        hasCode("session_exists"),
      );
      await assert.rejects(
        journal.append("missing", [{ kind: "tool_returned", call: 1 }]),
        hasCode("session_not_found"),
      );
      await journal.updateSession({ ...session("s"), host: { id: "h", tokenHash: "abc" } });
      assert.equal((await journal.getSession("s"))?.host?.tokenHash, "abc");
      assert.deepEqual((await journal.listSessions()).map((meta) => meta.id), ["s"]);
      await journal.deleteSession("s");
      assert.equal(await journal.getSession("s"), undefined);
      await assert.rejects(
        journal.read("s"),
        hasCode("session_not_found"),
      );
    }),
  );

  Deno.test(
    `${name}: maxHostSessions counts a host's sessions: one past it is limit_exceeded and stores nothing, a delete frees room, other hosts and host-less sessions are not counted`,
    withJournal(async (journal) => {
      const of = (id: string, host?: string) => ({ ...session(id), ...host && { host: { id: host, tokenHash: "x" } } });
      const limit = { maxHostSessions: 3 };
      await journal.createSession(of("plain"), limit);
      // Created concurrently, one more than the limit: exactly three land.
      const created = await Promise.allSettled(
        ["a1", "a2", "a3", "a4"].map((id) => journal.createSession(of(id, "a"), limit)),
      );
      assert.deepEqual(created.map((outcome) => outcome.status).sort(), [
        "fulfilled",
        "fulfilled",
        "fulfilled",
        "rejected",
      ]);
      const refused = created.find((outcome) => outcome.status === "rejected") as PromiseRejectedResult;
      await assert.rejects(Promise.reject(refused.reason), hasCode("limit_exceeded"));
      assert.equal((await journal.listSessions()).filter((meta) => meta.host?.id === "a").length, 3);
      // An id already taken is session_exists, and takes no room.
      const taken = (await journal.listSessions()).find((meta) => meta.host?.id === "a")!.id;
      await assert.rejects(journal.createSession(of(taken, "a"), { maxHostSessions: 4 }), hasCode("session_exists"));
      await journal.createSession(of("b1", "b"), limit);
      await journal.createSession(of("unlimited", "a"));
      await assert.rejects(journal.createSession(of("a5", "a"), { maxHostSessions: 4 }), hasCode("limit_exceeded"));
      await journal.deleteSession(taken);
      await journal.deleteSession("unlimited");
      await journal.createSession(of("a5", "a"), limit);
      await assert.rejects(journal.createSession(of("a6", "a"), limit), hasCode("limit_exceeded"));
      for (const max of [0, -1, 1.5, Number.NaN, "3"]) {
        await assert.rejects(
          journal.createSession(of("bad", "a"), { maxHostSessions: max as number }),
          hasCode("invalid_argument"),
        );
      }
      const unreadable = [
        null,
        { maxHostSessions: 3, maxSessions: 3 },
        new Proxy({}, {
          ownKeys: () => {
            throw new Error("trap");
          },
        }),
        {
          get maxHostSessions(): number {
            throw new Error("getter");
          },
        },
      ];
      for (const options of unreadable) {
        await assert.rejects(journal.createSession(of("bad", "a"), options as never), hasCode("invalid_argument"));
      }
      assert.equal(await journal.getSession("bad"), undefined);
    }),
  );

  Deno.test(
    `${name}: openCalls lists started calls until they finish`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const started = (tool: string) => ({ kind: "tool_call_started" as const, tool, input: null, activation: "a" });
      const [first, second] = await journal.append("s", [started("one"), started("two")]);
      await journal.append("s", [{ kind: "tool_event", call: first.sequence, event: "e", data: null }]);
      assert.deepEqual(await journal.openCalls("s"), [first, second]);
      await journal.append("s", [{
        kind: "tool_call_finished",
        call: first.sequence,
        cause: "finish",
        outcome: { status: "ok", value: null },
      }]);
      assert.deepEqual(await journal.openCalls("s"), [second]);
    }),
  );

  Deno.test(
    `${name}: openCalls lists started model calls until they finish`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const [model] = await journal.append("s", [{
        kind: "model_call_started",
        origin: { kind: "agentloop" },
        activation: "a",
        provider: "p",
        model: "m",
        request: { messages: [{ role: "user", content: "hi" }], system: "", tools: [] },
      }]);
      assert.deepEqual(await journal.openCalls("s"), [model]);
      await journal.append("s", [{
        kind: "model_call_finished",
        call: model.sequence,
        outcome: { status: "unknown" },
      }]);
      assert.deepEqual(await journal.openCalls("s"), []);
    }),
  );

  Deno.test(
    `${name}: a record of 1 MiB round-trips between small ones`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const text = "ü€x".repeat(150_000);
      await journal.append("s", [{ kind: "tool_returned", call: 1 }]);
      const [big] = await journal.append("s", [
        { kind: "tool_event", call: 1, event: "big", data: { text } },
        { kind: "tool_returned", call: 2 },
      ]);
      await journal.append("s", [{ kind: "tool_returned", call: 3 }]);
      const records = await journal.read("s");
      assert.deepEqual(records.map((record) => record.sequence), [1, 2, 3, 4]);
      assert.deepEqual(records[1], big);
      assert.equal((records[1] as unknown as { data: { text: string } }).data.text, text);
    }),
  );

  Deno.test(
    `${name}: a deleted session's id starts again at 1 with none of its old records`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      await journal.append("s", [{ kind: "tool_returned", call: 1 }, { kind: "tool_returned", call: 2 }]);
      await journal.deleteSession("s");
      await journal.createSession(session("s"));
      assert.equal(await journal.head("s"), 0);
      assert.deepEqual(await journal.read("s"), []);
      const [record] = await journal.append("s", [{ kind: "tool_returned", call: 3 }]);
      assert.equal(record.sequence, 1);
      assert.deepEqual(await journal.read("s"), [record]);
    }),
  );

  Deno.test(
    `${name}: concurrent appends commit in the order they were made, a large one included`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const large = { kind: "tool_event" as const, call: 0, event: "big", data: "y".repeat(300_000) };
      const committed = await Promise.all([
        journal.append("s", [{ kind: "tool_returned", call: 1 }]),
        journal.append("s", [large]),
        journal.append("s", [{ kind: "tool_returned", call: 2 }, { kind: "tool_returned", call: 3 }]),
        journal.append("s", [large, { kind: "tool_returned", call: 4 }]),
      ]);
      assert.deepEqual(committed.map((records) => records.map((record) => record.sequence)), [[1], [2], [3, 4], [
        5,
        6,
      ]]);
      assert.deepEqual(await journal.read("s"), committed.flat());
    }),
  );

  const started = { kind: "tool_call_started" as const, tool: "t", input: null, activation: "a" };
  const finished = (call: number) => ({
    kind: "tool_call_finished" as const,
    call,
    cause: "finish" as const,
    outcome: { status: "ok" as const, value: null },
  });
  const untilExpired = async (expiresAt: number) => {
    while (Date.now() <= expiresAt) await new Promise((resolve) => setTimeout(resolve, expiresAt + 1 - Date.now()));
  };

  Deno.test(
    `${name}: a live lease keeps other owners and lease-less writers out`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const lease = await journal.acquire("s", { owner: "a", ttlMs: 60_000 });
      assert.equal(lease.owner, "a");
      assert.ok(lease.expiresAt > Date.now());
      await assert.rejects(journal.acquire("s", { owner: "b", ttlMs: 1_000 }), hasCode("session_owned"));
      await assert.rejects(journal.append("s", [{ kind: "tool_returned", call: 1 }]), hasCode("session_owned"));
      const [record] = await journal.append("s", [{ kind: "tool_returned", call: 2 }], { lease });
      assert.equal(record.sequence, 1);
      await journal.release(lease);
      const next = await journal.acquire("s", { owner: "b", ttlMs: 60_000 });
      assert.ok(next.token > lease.token);
      await assert.rejects(journal.acquire("missing", { owner: "b", ttlMs: 1_000 }), hasCode("session_not_found"));
      await assert.rejects(journal.acquire("s", { owner: "b", ttlMs: 0 }), hasCode("invalid_argument"));
    }),
  );

  Deno.test(
    `${name}: after a takeover the old owner's appends and renewals fail fenced and commit nothing`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const old = await journal.acquire("s", { owner: "a", ttlMs: 30 });
      await journal.append("s", [started], { lease: old });
      await untilExpired(old.expiresAt);
      const taken = await journal.acquire("s", { owner: "b", ttlMs: 60_000 });
      assert.ok(taken.token > old.token);
      await assert.rejects(journal.append("s", [finished(1)], { lease: old }), hasCode("fenced"));
      await assert.rejects(journal.renew(old, 60_000), hasCode("fenced"));
      await journal.release(old);
      await assert.rejects(journal.acquire("s", { owner: "a", ttlMs: 1_000 }), hasCode("session_owned"));
      assert.equal(await journal.head("s"), 1);
      const renewed = await journal.renew(taken, 120_000);
      assert.ok(renewed.expiresAt >= taken.expiresAt);
      const [end] = await journal.append("s", [finished(1)], { lease: renewed });
      assert.equal(end.sequence, 2);
    }),
  );

  Deno.test(
    `${name}: an expired lease not yet taken over still writes`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const lease = await journal.acquire("s", { owner: "a", ttlMs: 20 });
      await untilExpired(lease.expiresAt);
      const [record] = await journal.append("s", [started], { lease });
      assert.equal(record.sequence, 1);
      const [free] = await journal.append("s", [{ kind: "tool_returned", call: 1 }]);
      assert.equal(free.sequence, 2);
    }),
  );

  Deno.test(
    `${name}: a call gets exactly one terminal record; a second fails call_finished and commits nothing`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const [call] = await journal.append("s", [started]);
      await journal.append("s", [finished(call.sequence)]);
      await assert.rejects(
        journal.append("s", [{ kind: "tool_returned", call: 9 }, finished(call.sequence)]),
        hasCode("call_finished"),
      );
      await assert.rejects(journal.append("s", [finished(77)]), hasCode("call_finished"));
      assert.equal(await journal.head("s"), 2);
      const [again, end] = await journal.append("s", [started, finished(3)]);
      assert.deepEqual([again.sequence, end.sequence], [3, 4]);
      await assert.rejects(journal.append("s", [started, finished(5), finished(5)]), hasCode("call_finished"));
      assert.equal(await journal.head("s"), 4);
    }),
  );

  Deno.test(
    `${name}: one commit may end an earlier call and open and end calls of its own; it ends none it opens later or that no record of it opens`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const [earlier] = await journal.append("s", [started]);
      const mixed = await journal.append("s", [started, finished(earlier.sequence), started, finished(2)]);
      assert.deepEqual(mixed.map((record) => record.sequence), [2, 3, 4, 5]);
      assert.deepEqual((await journal.openCalls("s")).map((record) => record.sequence), [4]);
      await assert.rejects(journal.append("s", [finished(7), started]), hasCode("call_finished"));
      await assert.rejects(
        journal.append("s", [{ kind: "tool_returned", call: 4 }, finished(6)]),
        hasCode("call_finished"),
      );
      await assert.rejects(journal.append("s", [started, finished(6.5)]), hasCode("call_finished"));
      assert.equal(await journal.head("s"), 5);
      assert.deepEqual((await journal.openCalls("s")).map((record) => record.sequence), [4]);
    }),
  );

  Deno.test(
    `${name}: concurrent terminal records of one call: exactly one commits`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const calls = await journal.append("s", Array.from({ length: 20 }, () => started));
      const attempts = calls.flatMap((call) =>
        [0, 1, 2].map(() => journal.append("s", [finished(call.sequence)]).then(() => true, () => false))
      );
      const committed = (await Promise.all(attempts)).filter(Boolean).length;
      assert.equal(committed, 20);
      const terminals = (await journal.read("s")).filter((record) => record.kind === "tool_call_finished");
      assert.equal(new Set(terminals.map((record) => (record as { call: number }).call)).size, 20);
      assert.equal(terminals.length, 20);
      assert.deepEqual(await journal.openCalls("s"), []);
    }),
  );

  Deno.test(
    `${name}: a session deleted and created again is a new incarnation: old leases are fenced, old followers end`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const old = await journal.acquire("s", { owner: "a", ttlMs: 60_000 });
      await journal.append("s", [started, { kind: "tool_returned", call: 1 }], { lease: old });
      const follower = journal.subscribe("s")[Symbol.asyncIterator]();
      assert.equal((await follower.next()).value?.sequence, 1);
      assert.equal((await follower.next()).value?.sequence, 2);
      await journal.deleteSession("s");
      await journal.createSession(session("s"));
      const lease = await journal.acquire("s", { owner: "a", ttlMs: 60_000 });
      await journal.append("s", [started, started, started], { lease });
      // The old incarnation's lease, of the same owner, writes nothing to the new one.
      await assert.rejects(journal.append("s", [finished(1)], { lease: old }), hasCode("fenced"));
      await assert.rejects(journal.renew(old, 60_000), hasCode("fenced"));
      assert.equal(await journal.head("s"), 3);
      assert.deepEqual((await journal.openCalls("s")).map((record) => record.sequence), [1, 2, 3]);
      // The follower of the old incarnation ends instead of going on with the new one's record 3.
      await assert.rejects(follower.next(), hasCode("session_not_found"));
      const [end] = await journal.append("s", [finished(1)], { lease });
      assert.equal(end.sequence, 4);
    }),
  );

  Deno.test(
    `${name}: nodes beat in the journal, expired beats age out; holder names a live lease's owner`,
    withJournal(async (journal) => {
      // Long enough that a loaded machine still reads the beat and the lease before they lapse.
      const shortMs = 400;
      await journal.beat("n1", "http://127.0.0.1:8787", 60_000);
      await journal.beat("n2", "http://127.0.0.1:8788", shortMs);
      await journal.beat("n1", "http://127.0.0.1:8789", 60_000);
      const beats = await journal.nodes();
      assert.deepEqual(beats.map(({ node, url }) => [node, url]).sort(), [
        ["n1", "http://127.0.0.1:8789"],
        ["n2", "http://127.0.0.1:8788"],
      ]);
      await untilExpired(Math.max(...beats.filter((beat) => beat.node === "n2").map((beat) => beat.expiresAt)));
      assert.deepEqual((await journal.nodes()).map((beat) => beat.node), ["n1"]);
      await assert.rejects(journal.beat("", "http://127.0.0.1:1", 1_000), hasCode("invalid_argument"));
      await assert.rejects(journal.beat("n3", "not a url", 1_000), hasCode("invalid_argument"));
      const long = `http://127.0.0.1:1/${"x".repeat(120)}`;
      await assert.rejects(journal.beat("n3", long, 1_000), hasCode("invalid_argument"));
      await assert.rejects(journal.beat("n3", "http://127.0.0.1:1", 0), hasCode("invalid_argument"));

      await journal.createSession(session("s"));
      assert.equal(await journal.holder("s"), undefined);
      const lease = await journal.acquire("s", { owner: "n1", ttlMs: 60_000 });
      const held = await journal.holder("s");
      assert.deepEqual([held?.owner, held?.token], ["n1", lease.token]);
      await journal.release(lease);
      assert.equal(await journal.holder("s"), undefined);
      await assert.rejects(journal.holder("missing"), hasCode("session_not_found"));

      // A session whose owner stopped renewing with a call open is stranded until a new owner ends the call.
      await journal.createSession(session("idle"));
      await journal.acquire("idle", { owner: "n2", ttlMs: shortMs });
      const dying = await journal.acquire("s", { owner: "n2", ttlMs: shortMs });
      const [call] = await journal.append("s", [started], { lease: dying });
      assert.deepEqual(await journal.stranded(), []);
      await untilExpired(dying.expiresAt);
      assert.deepEqual(await journal.stranded(), ["s"]);
      const next = await journal.acquire("s", { owner: "n1", ttlMs: 60_000 });
      assert.deepEqual(await journal.stranded(), [], "a live owner's session is not stranded");
      await journal.append("s", [finished(call.sequence)], { lease: next });
      await journal.release(next);
      assert.deepEqual(await journal.stranded(), [], "nor is a released one without open calls");
      // Released with a call open (an owner that could not commit the call's end gives the session up), it is.
      const last = await journal.acquire("s", { owner: "n1", ttlMs: 60_000 });
      await journal.append("s", [started], { lease: last });
      await journal.release(last);
      assert.deepEqual(await journal.stranded(), ["s"]);
      // A session no one ever leased, written lease-less, is no one's to recover.
      await journal.createSession(session("free"));
      await journal.append("free", [started]);
      assert.deepEqual(await journal.stranded(), ["s"]);
    }),
  );

  Deno.test(
    `${name}: an append keeps its records as they were when appended, whatever the caller's objects do next`,
    withJournal(async (journal) => {
      await journal.createSession(session("s"));
      const first = { n: 1 };
      const firstBody = { kind: "tool_event" as const, call: 0, event: "first", data: first };
      const appended = [journal.append("s", [firstBody])];
      first.n = 2;
      firstBody.event = "changed";
      // Appended while the first is in flight: a store that commits in order holds it until then.
      let reads = 0;
      const fickle = {
        get n() {
          return ++reads;
        },
      };
      const second = { kind: "tool_event" as const, call: 0, event: "second", data: { list: [1] } };
      appended.push(journal.append("s", [second, { kind: "tool_event", call: 0, event: "fickle", data: fickle }]));
      second.data.list.push(2);
      const answers = (await Promise.all(appended)).flat();
      const read = await journal.read("s");
      assert.deepEqual(read.map((record) => record.kind === "tool_event" && [record.event, record.data]), [
        ["first", { n: 1 }],
        ["second", { list: [1] }],
        ["fickle", { n: 1 }],
      ]);
      assert.deepEqual(answers, read);
    }),
  );
}
