import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, type BrainErrorCode, type BrainSession, tool } from "../../mod.ts";
import { type Journal, MemoryJournal } from "../../src/journal/mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { withDeadline } from "../_support/deadline.ts";
import { serveBrain } from "../../src/host/server/server.ts";

/**
 * Application journals (plain objects implementing the public Journal interface) that misbehave: each
 * answers one method wrongly, over a working memory store. Whatever it answers, the caller gets a
 * BrainError with a stable code: `journal_corrupt` for an answer no store can give, `storage_unavailable`
 * for a throw, a rejection, or no answer within the Brain's lease time. No call stays open.
 */

const add = tool({
  name: "add",
  description: "Add.",
  input: z.object({ a: z.number(), b: z.number() }),
  run: ({ a, b }, ctx) => ctx.finish(a + b),
});

type Method = keyof Journal;
/** How a misbehaving method answers, given the store and the arguments it was called with. */
type Answer = (store: MemoryJournal, args: unknown[]) => unknown;

const LEASE_MS = 300;

/** A plain object over a memory store whose methods in `answers` answer by them once armed. */
function appJournal(answers: Partial<Record<Method, Answer>>) {
  const store = new MemoryJournal();
  const state = { armed: false };
  const journal = {} as Record<Method, (...args: unknown[]) => unknown>;
  for (const name of METHODS) {
    const answer = answers[name];
    journal[name] = (...args: unknown[]) =>
      state.armed && answer
        ? answer(store, args)
        // The store outlives the journal's close, for the test to read what the Brain left in it.
        : name === "close"
        ? Promise.resolve()
        : (store[name] as (...args: unknown[]) => unknown).apply(store, args);
  }
  return { journal: journal as unknown as Journal, store, state };
}

const METHODS: Method[] = [
  "append",
  "acquire",
  "renew",
  "release",
  "holder",
  "stranded",
  "beat",
  "nodes",
  "read",
  "head",
  "openCalls",
  "subscribe",
  "createSession",
  "updateSession",
  "getSession",
  "listSessions",
  "deleteSession",
  "close",
];

/** A revoked Proxy: any use of it throws a TypeError. */
function revoked(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

/** A record every read of whose `sequence` throws. */
function throwingGetter(record: JournalRecord): object {
  return {
    ...record,
    get sequence(): number {
      throw new TypeError("no sequence today");
    },
  };
}

/** What the store answers, by `call`, then changed by `change`. */
const changed =
  (call: (store: MemoryJournal, args: unknown[]) => Promise<unknown>, change: (real: unknown) => unknown) =>
  async (store: MemoryJournal, args: unknown[]) => change(await call(store, args));
const realAppend = (store: MemoryJournal, args: unknown[]) => store.append(...(args as Parameters<Journal["append"]>));
const realRead = (store: MemoryJournal, args: unknown[]) => store.read(...(args as Parameters<Journal["read"]>));
/** The records of the probe's session (the one with records), as if they were the session asked about's. */
const probedRecords = async (store: MemoryJournal, args: unknown[]) => {
  for (const { id } of await store.listSessions()) {
    const read = await store.read(id);
    if (read.length > 0) return read.map((record) => ({ ...record, sessionId: args[0] }));
  }
  throw new Error("the probe's session has no records");
};
/** The intent of the probe's committed call, as if it were open in the new session asked about. */
const realOpenCalls = async (store: MemoryJournal, args: unknown[]) =>
  (await probedRecords(store, args)).filter((record) => record.kind === "tool_call_started");
const records = (real: unknown) => real as JournalRecord[];

/** Thrown or rejected values that are no BrainError, and answers that never come: `storage_unavailable`. */
const FAILURES: [string, Answer][] = [
  ["throws a TypeError", () => {
    throw new TypeError("x is not a function");
  }],
  ["throws a string", () => {
    throw "the store is down";
  }],
  ["throws null", () => {
    throw null;
  }],
  ["throws undefined", () => {
    throw undefined;
  }],
  ["throws a revoked Proxy", () => {
    throw revoked();
  }],
  ["rejects with a string", () => Promise.reject("down")],
  ["rejects with undefined", () => Promise.reject(undefined)],
  ["rejects with a revoked Proxy", () => Promise.reject(revoked())],
  ["returns a revoked Proxy in place of a promise", () => revoked()],
  // A promise cannot resolve to a revoked Proxy: looking its `then` up throws, which rejects it.
  ["resolves to a revoked Proxy", () => Promise.resolve(revoked())],
  ["never settles", () => new Promise(() => {})],
];

/** Answers of the methods that answer records, that no store can give: `journal_corrupt`. */
const WRONG_RECORDS: [string, (real: unknown) => unknown][] = [
  ["a string", () => "records"],
  ["an object", () => ({ length: 1 })],
  ["null", () => null],
  ["records of an unknown kind", (real) => records(real).map((record) => ({ ...record, kind: "nope" }))],
  ["records without a commit time", (real) => records(real).map(({ at: _at, ...record }) => record)],
  ["records without a sequence", (real) => records(real).map(({ sequence: _sequence, ...record }) => record)],
  ["records numbered 0", (real) => records(real).map((record) => ({ ...record, sequence: 0 }))],
  ["records numbered 1.5", (real) => records(real).map((record) => ({ ...record, sequence: 1.5 }))],
  ["records of another session", (real) => records(real).map((record) => ({ ...record, sessionId: "other" }))],
  ["records whose sequence getter throws", (real) => records(real).map(throwingGetter)],
  ["records that are revoked Proxies", (real) => records(real).map(revoked)],
  ["records nested 10 000 levels deep", (real) => records(real).map((record) => ({ ...record, deep: nested(10_000) }))],
];

function nested(levels: number): unknown {
  let value: unknown = "s";
  for (let level = 0; level < levels; level++) value = [value];
  return value;
}

/** The code each answer ends in: the caller's BrainError's code, or what else reached it. */
async function outcomeOf(work: Promise<unknown>): Promise<string> {
  try {
    await withDeadline(work, "the caller's answer");
    return "accepted";
  } catch (error) {
    return error instanceof BrainError ? error.code : `a bare ${describe(error)}`;
  }
}

function describe(error: unknown): string {
  try {
    return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  } catch {
    return typeof error;
  }
}

/** What the application does that reaches each method, given a session with one call committed. */
const ACTS: Partial<Record<Method, (brain: Brain, session: BrainSession) => Promise<unknown>>> = {
  append: (_brain, session) => session.call("add", { a: 1, b: 2 }),
  read: (_brain, session) => session.read(),
  // Ownership of a new session first ends the calls it has open.
  openCalls: (brain) => brain.sessions.create({ tools: [add()] }),
  acquire: (brain) => brain.sessions.create({ tools: [add()] }),
  createSession: (brain) => brain.sessions.create({ tools: [add()] }),
  getSession: (brain, session) => brain.sessions.get(session.id),
  listSessions: (brain) => brain.sessions.list(),
  deleteSession: (brain, session) => brain.sessions.delete(session.id),
  // The viewer's session list shows each session's head.
  head: async (brain) => {
    const viewer = brain.viewer({ operatorToken: "secret" });
    const response = await viewer.fetch(
      new Request("http://localhost/v1/sessions", { headers: { authorization: "Bearer secret" } }),
    );
    const body = await response.json();
    if (!response.ok) throw new BrainError(body.error.code, body.error.message);
    return body;
  },
  subscribe: async (_brain, session) => {
    for await (const _record of session.records()) return;
  },
};

/**
 * Runs `act` against a Brain over an application journal whose `method` answers by `answer`, and returns
 * the code the caller got. The Brain then closes over the mended journal, leaving no call open in the store.
 */
async function probe(method: Method, answer: Answer): Promise<string> {
  const { journal, store, state } = appJournal({ [method]: answer });
  const brain = new Brain({ journal, leaseMs: LEASE_MS });
  const session = await brain.sessions.create({ tools: [add()] });
  // One committed call, so reads and follows have records to answer with.
  assert.deepEqual((await session.call("add", { a: 1, b: 1 })).outcome, { status: "ok", value: 2 });
  state.armed = true;
  const code = await outcomeOf(ACTS[method]!(brain, session));
  state.armed = false;
  await withDeadline(brain.close(), "the Brain to close");
  for (const { id } of await store.listSessions()) {
    assert.deepEqual(await store.openCalls(id), [], `${method}: no call is left open in session ${id}`);
  }
  await store.close();
  return code;
}

/** Runs every variant against `method` and returns those whose caller got anything but `expected`. */
async function wrongOutcomes(method: Method, variants: [string, Answer, BrainErrorCode][]): Promise<string[]> {
  const wrong: string[] = [];
  for (const [what, answer, expected] of variants) {
    const code = await probe(method, answer);
    if (code !== expected) wrong.push(`${method} ${what}: ${code}, not ${expected}`);
  }
  return wrong;
}

const failing = (): [string, Answer, BrainErrorCode][] =>
  FAILURES.map(([what, answer]) => [what, answer, "storage_unavailable"]);

for (const method of ["append", "read", "openCalls"] as const) {
  const real = { append: realAppend, read: realRead, openCalls: realOpenCalls }[method];
  Deno.test(`hostile application journal: ${method} that fails or answers no records fails the caller with a code`, async () => {
    const corrupt: [string, Answer, BrainErrorCode][] = WRONG_RECORDS.map(([what, change]) => [
      `answers ${what}`,
      changed(real, change),
      "journal_corrupt",
    ]);
    assert.deepEqual(await wrongOutcomes(method, [...failing(), ...corrupt]), []);
  });
}

Deno.test("hostile application journal: append numbering a commit out of place fails the caller journal_corrupt", async () => {
  const wrong = await wrongOutcomes("append", [
    ["answers no record", changed(realAppend, () => []), "journal_corrupt"],
    [
      "answers two records for one",
      changed(realAppend, (real) => [...records(real), ...records(real)]),
      "journal_corrupt",
    ],
    [
      "answers a record of another kind",
      changed(realAppend, (real) => records(real).map((record) => ({ ...record, kind: "user_message", content: "" }))),
      "journal_corrupt",
    ],
    [
      "numbers the commit 1 again, going backwards",
      changed(realAppend, (real) => records(real).map((record) => ({ ...record, sequence: 1 }))),
      "journal_corrupt",
    ],
  ]);
  assert.deepEqual(wrong, []);
});

Deno.test("hostile application journal: read answering a gap, a step back or past its limit fails the caller journal_corrupt", async () => {
  const wrong = await wrongOutcomes("read", [
    ["skips a record", changed(realRead, (real) => records(real).slice(1)), "journal_corrupt"],
    ["answers backwards", changed(realRead, (real) => records(real).toReversed()), "journal_corrupt"],
    ["answers a record twice", changed(realRead, (real) => [...records(real), ...records(real)]), "journal_corrupt"],
  ]);
  assert.deepEqual(wrong, []);
});

Deno.test("hostile application journal: head that fails or answers no sequence fails the viewer's request with a code", async () => {
  const wrong = await wrongOutcomes("head", [
    ...failing(),
    ...[["a string", "3"], ["-1", -1], ["1.5", 1.5], ["NaN", NaN], ["null", null]].map((
      [what, head],
    ): [string, Answer, BrainErrorCode] => [`answers ${what}`, () => Promise.resolve(head), "journal_corrupt"]),
  ]);
  assert.deepEqual(wrong, []);
});

Deno.test("hostile application journal: openCalls answering records that open no call fails journal_corrupt", async () => {
  const wrong = await wrongOutcomes("openCalls", [
    [
      "answers a finished call",
      probedRecords,
      "journal_corrupt",
    ],
  ]);
  assert.deepEqual(wrong, []);
});

/** Answers of getSession no store gives. */
const WRONG_METAS: [string, unknown][] = [
  ["a string", "meta"],
  ["null", null],
  ["metadata without tools", { id: "x", createdAt: 1 }],
  ["metadata whose tools are no list", { id: "x", createdAt: 1, tools: "add" }],
];

Deno.test("hostile application journal: session lookups that fail or answer no metadata fail the caller with a code", async () => {
  const metaOf = (value: unknown): Answer => (_store, args) =>
    Promise.resolve(
      typeof value === "object" && value !== null && "createdAt" in value ? { ...value, id: args[0] } : value,
    );
  const wrong = [
    ...await wrongOutcomes("getSession", [
      ...failing(),
      ...WRONG_METAS.map(([what, value]): [string, Answer, BrainErrorCode] => [
        `answers ${what}`,
        metaOf(value),
        "journal_corrupt",
      ]),
      [
        "answers another session's metadata",
        (store) => store.listSessions().then(() => ({ id: "other", createdAt: 1, tools: [] })),
        "journal_corrupt",
      ],
    ]),
    ...await wrongOutcomes("listSessions", [
      ...failing(),
      ...WRONG_METAS.map(([what, value]): [string, Answer, BrainErrorCode] => [
        `answers a list of ${what}`,
        () => Promise.resolve([value]),
        "journal_corrupt",
      ]),
      ["answers no list", () => Promise.resolve({ 0: "x" }), "journal_corrupt"],
      ["answers a list holding a revoked Proxy", () => Promise.resolve([revoked()]), "journal_corrupt"],
    ]),
  ];
  assert.deepEqual(wrong, []);
});

Deno.test("hostile application journal: a session's creation, lease and deletion that fail or answer no lease fail with a code", async () => {
  const lease = (change: (real: Record<string, unknown>) => unknown): Answer => (store, args) =>
    store.acquire(...(args as Parameters<Journal["acquire"]>)).then((real) => change({ ...real }));
  const wrong = [
    ...await wrongOutcomes("createSession", failing()),
    ...await wrongOutcomes("deleteSession", failing()),
    ...await wrongOutcomes("acquire", [
      ...failing(),
      ["answers no lease", () => Promise.resolve("lease"), "journal_corrupt"],
      ["answers a lease of another owner", lease((real) => ({ ...real, owner: "someone" })), "journal_corrupt"],
      ["answers a lease of another session", lease((real) => ({ ...real, sessionId: "other" })), "journal_corrupt"],
      ["answers a lease without a token", lease(({ token: _token, ...real }) => real), "journal_corrupt"],
    ]),
  ];
  assert.deepEqual(wrong, []);
});

Deno.test("hostile application journal: a subscription that fails, ends wrongly or yields no next record fails the follower with a code", async () => {
  const yielding = (...values: unknown[]): Answer => () => ({
    async *[Symbol.asyncIterator]() {
      yield* values;
    },
  });
  const realFirst = async (store: MemoryJournal, id: string) => (await store.read(id))[0];
  const following = (change: (record: JournalRecord) => unknown): Answer => (store, args) => ({
    async *[Symbol.asyncIterator]() {
      yield change(await realFirst(store, args[0] as string));
    },
  });
  const wrong = await wrongOutcomes("subscribe", [
    ["throws a TypeError", () => {
      throw new TypeError("no subscriptions");
    }, "storage_unavailable"],
    ["answers null", () => null, "storage_unavailable"],
    [
      "answers an iterable whose iterator is a string",
      () => ({ [Symbol.asyncIterator]: () => "records" }),
      "journal_corrupt",
    ],
    ["answers a revoked Proxy", () => revoked(), "storage_unavailable"],
    ["yields a string", yielding("record"), "journal_corrupt"],
    ["yields null", yielding(null), "journal_corrupt"],
    ["yields a revoked Proxy", yielding(revoked()), "storage_unavailable"],
    ["yields a record of an unknown kind", following((record) => ({ ...record, kind: "nope" })), "journal_corrupt"],
    ["yields record 2 first", following((record) => ({ ...record, sequence: 2 })), "journal_corrupt"],
    ["yields a record whose getter throws", following(throwingGetter), "journal_corrupt"],
    ["iterates by throwing null", () => ({
      [Symbol.asyncIterator]: () => ({
        next: () => {
          throw null;
        },
      }),
    }), "storage_unavailable"],
    ["iterates with results that are no results", () => ({
      [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve("next") }),
    }), "journal_corrupt"],
  ]);
  assert.deepEqual(wrong, []);
});

Deno.test("hostile application journal: a subscription that never yields ends when its follower stops, or its Brain closes", async () => {
  const { journal, state } = appJournal({
    subscribe: () => ({ [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => {}) }) }),
  });
  const brain = new Brain({ journal, leaseMs: LEASE_MS });
  const session = await brain.sessions.create({ tools: [add()] });
  state.armed = true;
  const stop = new AbortController();
  const stopped = (async () => {
    for await (const _record of session.records({ signal: stop.signal })) return "a record";
    return "ended";
  })();
  const closed = (async () => {
    for await (const _record of session.records()) return "a record";
    return "ended";
  })();
  stop.abort();
  assert.equal(await withDeadline(stopped, "the stopped follower to end"), "ended");
  await withDeadline(brain.close(), "the Brain to close");
  assert.equal(await withDeadline(closed, "the follower of a closed Brain to end"), "ended");
});

Deno.test("hostile application journal: a close that fails or never settles fails Brain.close storage_unavailable", async () => {
  const wrong: string[] = [];
  for (const [what, answer] of FAILURES) {
    const { journal, state } = appJournal({ close: answer });
    const brain = new Brain({ journal, leaseMs: LEASE_MS });
    await brain.sessions.create({ tools: [add()] });
    state.armed = true;
    const code = await outcomeOf(brain.close());
    if (code !== "storage_unavailable") wrong.push(`close ${what}: ${code}`);
  }
  assert.deepEqual(wrong, []);
});

Deno.test("hostile application journal: a Brain server whose journal's heartbeat throws, sweep never answers and owner lookups answer garbage serves its hosts and shuts down", async () => {
  const serverToken = "operator-secret";
  const { journal, state } = appJournal({
    beat: () => {
      throw new TypeError("no heartbeat");
    },
    stranded: () => new Promise(() => {}),
    holder: () => Promise.resolve({ owner: 5 }),
    nodes: () => Promise.resolve("nodes"),
  });
  state.armed = true;
  const server = await withDeadline(serveBrain({ journal, serverToken, leaseMs: LEASE_MS }), "the server to start");
  try {
    await using brain = new Brain({ url: server.url, serverToken, token: "t", host: "app" });
    const session = await brain.sessions.create({ tools: [add()] });
    // A second writing handle asks the journal whether another server owns the session.
    const again = await brain.sessions.get(session.id, { tools: [add()] });
    assert.deepEqual((await again.call("add", { a: 1, b: 2 })).outcome, { status: "ok", value: 3 });
  } finally {
    await withDeadline(server.shutdown(), "the server to shut down");
  }
});

Deno.test("hostile application journal: a lease renewal answering no lease leaves the owner its lease, and its calls commit", async () => {
  const renewed = Promise.withResolvers<void>();
  const { journal, state } = appJournal({
    renew: () => {
      renewed.resolve();
      return Promise.resolve({ sessionId: 5, token: "t" });
    },
  });
  await using brain = new Brain({ journal, leaseMs: LEASE_MS });
  const session = await brain.sessions.create({ tools: [add()] });
  state.armed = true;
  await withDeadline(renewed.promise, "a renewal");
  assert.deepEqual((await session.call("add", { a: 1, b: 2 })).outcome, { status: "ok", value: 3 });
});
