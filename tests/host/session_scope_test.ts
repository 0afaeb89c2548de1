import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, tool } from "../../mod.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { startPostgres } from "../_support/postgres.ts";
import { scratchDir } from "../_support/scratch.ts";
import { DEFAULT_BUDGETS, rawHost } from "./raw_host.ts";

const OPERATOR = "operator-secret";

const note = tool({
  name: "note",
  description: "Notes a text.",
  input: z.object({ text: z.string() }),
  run: async ({ text }, ctx) => {
    await ctx.emit("noted", { text });
    return ctx.finish(text);
  },
});

const client = (url: string, host: string) => new Brain({ url, token: `${host}-token`, host, serverToken: OPERATOR });

/** The texts a session's `note` calls were given, from its records as its host reads them. */
async function notes(session: { read(): Promise<{ kind: string; input?: unknown; sessionId: string }[]> }) {
  const records = await session.read();
  return records.filter((record) => record.kind === "tool_call_started").map((record) => record.input);
}

/** The code and message of what `attempt` rejects with, `id` in the message replaced by `ID`. */
async function refusal(attempt: Promise<unknown>, id: string) {
  const error = await attempt.then(() => undefined, (error: unknown) => error);
  assert.ok(error instanceof BrainError, `expected a BrainError, got ${error}`);
  return { code: error.code, message: error.message.replaceAll(id, "ID") };
}

Deno.test("two hosts each have their own session x: create, call, read, list, get and delete see only their own", async () => {
  const server = await serveBrain({ serverToken: OPERATOR });
  const alpha = client(server.url, "alpha");
  const beta = client(server.url, "beta");
  try {
    const ours = await alpha.sessions.create({ id: "x", tools: [note()] });
    await ours.call("note", { text: "alpha's" });
    const theirs = await beta.sessions.create({ id: "x", tools: [note()] });
    assert.equal(theirs.id, "x");
    await theirs.call("note", { text: "beta's" });

    assert.deepEqual(await notes(ours), [{ text: "alpha's" }]);
    assert.deepEqual(await notes(theirs), [{ text: "beta's" }]);
    assert.ok((await theirs.read()).every((record) => record.sessionId === "x"), "records name the host's own id");
    assert.deepEqual((await alpha.sessions.list()).map((meta) => meta.id), ["x"]);
    assert.deepEqual((await beta.sessions.list()).map((meta) => meta.id), ["x"]);
    const keys = (await server.journal.listSessions()).map((meta) => meta.id).sort();
    assert.deepEqual(keys, [hostSessionKey("alpha", "x"), hostSessionKey("beta", "x")]);

    await theirs.end();
    const reopened = await beta.sessions.get("x", { tools: [note()] });
    assert.deepEqual(await notes(reopened), [{ text: "beta's" }]);
    const following = reopened.records()[Symbol.asyncIterator]();
    assert.deepEqual([(await following.next()).value?.sessionId], ["x"]);
    await following.return?.();

    await beta.sessions.delete("x");
    assert.deepEqual(await notes(ours), [{ text: "alpha's" }], "beta's delete left alpha's x alone");
    assert.deepEqual(
      await refusal(beta.sessions.get("x"), "x"),
      await refusal(beta.sessions.get("never"), "never"),
      "a deleted id answers as one that never existed",
    );
    const again = await beta.sessions.create({ id: "x", tools: [note()] });
    assert.deepEqual(await notes(again), [], "a reused id starts empty");
    assert.deepEqual(await refusal(beta.sessions.create({ id: "x" }), "never-present"), {
      code: "session_exists",
      message: "session x already exists",
    }, "messages name the host's own id, never its journal key");
    assert.deepEqual(await notes(ours), [{ text: "alpha's" }]);
  } finally {
    await beta.close();
    await alpha.close();
    await server.shutdown();
  }
});

Deno.test("over the wire, another host's session ids are neither refused nor found: every answer is a stranger's", async () => {
  const server = await serveBrain({ serverToken: OPERATOR });
  const owner = client(server.url, "owner");
  const raw = await rawHost(server.url, "prober", "prober-token", OPERATOR);
  try {
    await owner.sessions.create({ id: "secret-plan", tools: [note()] });
    const tools = [{ name: "t", description: "A Tool.", inputSchema: {}, implementation: "host" }];
    const ask = async (frame: Record<string, unknown>) => {
      raw.socket.send(JSON.stringify({ id: 1, ...frame }));
      const reply = await raw.next() as { value?: unknown; error?: { code: string; message: string } };
      return reply.error ? { code: reply.error.code, message: reply.error.message } : { value: reply.value };
    };
    assert.deepEqual(await ask({ op: "list" }), { value: [] }, "the prober lists none of the owner's sessions");
    assert.deepEqual(await ask({ op: "delete", session: "secret-plan" }), { value: null });
    assert.deepEqual(await ask({ op: "create", handle: "h1", session: "secret-plan", tools }), {
      value: DEFAULT_BUDGETS,
    });
    assert.deepEqual(await ask({ op: "create", handle: "h2", session: "never-was", tools }), {
      value: DEFAULT_BUDGETS,
    });
    assert.deepEqual(
      (await ask({ op: "read", session: "secret-plan" }) as { value: { sessionId: string }[] }).value,
      [],
      "the prober's own secret-plan is a new, empty session",
    );
    assert.deepEqual(await notes(await owner.sessions.get("secret-plan")), [], "the owner's session is untouched");
    const scoped = await ask({ op: "create", handle: "h3", session: "owner~secret-plan", tools });
    assert.equal((scoped as { code?: string }).code, "invalid_argument", "a host cannot name a journal key");
  } finally {
    raw.socket.close();
    await raw.closed;
    await owner.close();
    await server.shutdown();
  }
});

Deno.test("the viewer shows a host its own session x under its own id, and the operator every host's", async () => {
  const server = await serveBrain({ serverToken: OPERATOR });
  const alpha = client(server.url, "alpha");
  const beta = client(server.url, "beta");
  try {
    await (await alpha.sessions.create({ id: "x", tools: [note()] })).call("note", { text: "alpha's" });
    await (await beta.sessions.create({ id: "x", tools: [note()] })).call("note", { text: "beta's" });
    const view = async (path: string, authorization: string) => {
      const response = await fetch(`${server.url}${path}`, { headers: { authorization } });
      return await response.json();
    };
    const asBeta = `Basic ${btoa("beta:beta-token")}`;
    const listed = await view("/v1/sessions", asBeta);
    assert.deepEqual(listed.sessions.map((session: { id: string }) => session.id), ["x"]);
    assert.equal((await view("/v1/sessions/x", asBeta)).id, "x");
    const { records } = await view("/v1/sessions/x/records", asBeta);
    const started = records.filter((record: { kind: string }) => record.kind === "tool_call_started");
    assert.deepEqual(started.map((record: { input: unknown }) => record.input), [{ text: "beta's" }]);
    assert.ok(records.every((record: { sessionId: string }) => record.sessionId === "x"));

    const strangers = await view(`/v1/sessions/${hostSessionKey("alpha", "x")}/records`, asBeta);
    const missing = await view(`/v1/sessions/${hostSessionKey("alpha", "never")}/records`, asBeta);
    assert.equal(strangers.error.code, "session_not_found", "beta cannot read alpha's session by its key");
    assert.equal(strangers.error.message.replace("x", "ID"), missing.error.message.replace("never", "ID"));

    const operator = await view("/v1/sessions", `Bearer ${OPERATOR}`);
    const keys = operator.sessions.map((session: { id: string; host: string }) => [session.id, session.host]).sort();
    assert.deepEqual(keys, [[hostSessionKey("alpha", "x"), "alpha"], [hostSessionKey("beta", "x"), "beta"]]);
    const alphas = await view(`/v1/sessions/${hostSessionKey("alpha", "x")}/records`, `Bearer ${OPERATOR}`);
    assert.ok(
      alphas.records.some((record: { input?: unknown }) => JSON.stringify(record.input) === '{"text":"alpha\'s"}'),
    );
  } finally {
    await beta.close();
    await alpha.close();
    await server.shutdown();
  }
});

const dir = scratchDir("session-scope");

for (const journal of ["kv", "postgres"] as const) {
  Deno.test({
    name: `over a ${journal} journal, each host's session x survives a server restart as its own`,
    async fn() {
      await using postgres = journal === "postgres" ? await startPostgres() : undefined;
      const store = postgres ? { url: postgres.url } : { path: `${dir}/${crypto.randomUUID()}.kv` };
      let server = await serveBrain({ serverToken: OPERATOR, ...store });
      try {
        for (const host of ["alpha", "beta"]) {
          const brain = client(server.url, host);
          await (await brain.sessions.create({ id: "x", tools: [note()] })).call("note", { text: `${host}'s` });
          await brain.close();
        }
        await server.shutdown();
        server = await serveBrain({ serverToken: OPERATOR, ...store });
        for (const host of ["alpha", "beta"]) {
          const brain = client(server.url, host);
          try {
            assert.deepEqual((await brain.sessions.list()).map((meta) => meta.id), ["x"]);
            assert.deepEqual(await notes(await brain.sessions.get("x")), [{ text: `${host}'s` }]);
          } finally {
            await brain.close();
          }
        }
      } finally {
        await server.shutdown();
      }
    },
  });
}

Deno.test("on a server over a KV file, session metadata past 60,000 bytes is payload_too_large naming the host's own id, and stores nothing", async () => {
  const server = await serveBrain({ serverToken: OPERATOR, path: `${dir}/${crypto.randomUUID()}.kv` });
  const brain = client(server.url, "wordy");
  try {
    const wordy = tool({
      name: "wordy",
      description: "w".repeat(70_000),
      input: z.object({}),
      run: (_, ctx) => ctx.finish(),
    });
    const refused = await refusal(brain.sessions.create({ id: "big", tools: [wordy()] }), "big");
    assert.equal(refused.code, "payload_too_large");
    assert.match(refused.message, /^session ID: its metadata/);
    assert.deepEqual(await server.journal.listSessions(), []);
    assert.deepEqual(await brain.sessions.list(), [], "the connection keeps working");
  } finally {
    await brain.close();
    await server.shutdown();
  }
});
