import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainError, tool } from "../../mod.ts";
import { hashToken } from "../../src/embedded/host_token.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";

const ping = tool({
  name: "ping",
  description: "Answers pong.",
  input: z.object({}),
  run: (_input, ctx) => ctx.finish("pong"),
});

Deno.test("a wrong or missing host token gets 401 and no connection, so nothing is dispatched to it", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  await using owner = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "owner-secret",
    host: "app",
  });
  const session = await owner.sessions.create({ tools: [ping()] });
  const endpoint = `${server.url}/v1/host?host=app`;
  for (
    const headers of [{} as Record<string, string>, { authorization: "Bearer wrong-secret" }, {
      authorization: "Basic b3duZXI=",
    }]
  ) {
    const response = await fetch(endpoint, { headers: { ...headers, upgrade: "websocket" } });
    await response.body?.cancel();
    assert.equal(response.status, 401);
  }
  const intruder = new Brain({ url: server.url, serverToken: "operator-secret", token: "wrong-secret", host: "app" });
  try {
    await assert.rejects(intruder.sessions.list(), hasCode("unauthorized"));
    await assert.rejects(
      intruder.sessions.get(session.id, { tools: [ping()] }),
      hasCode("unauthorized"),
    );
  } finally {
    await intruder.close();
  }
  assert.equal(server.connections, 1, "only the owner's socket was ever accepted");
  assert.deepEqual((await session.call("ping", {})).outcome, { status: "ok", value: "pong" });
});

Deno.test("Brain keeps only the token's hash, and another host cannot open the session", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  await using owner = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "hash-me-secret",
    host: "owner",
  });
  await using other = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "other-secret",
    host: "other",
  });
  const session = await owner.sessions.create({ tools: [ping()] });
  await session.call("ping", {});
  const [meta] = await server.journal.listSessions();
  assert.deepEqual(meta.host, { id: "owner", tokenHash: await hashToken("hash-me-secret") });
  const stored = JSON.stringify([meta, await server.journal.read(hostSessionKey("owner", session.id))]);
  assert.ok(!stored.includes("hash-me-secret"));
  assert.deepEqual(await other.sessions.list(), []);
  const missing = await other.sessions.get("no-such-session").catch((error: BrainError) => error);
  const foreign = await other.sessions.get(session.id).catch((error: BrainError) => error);
  assert.equal(foreign instanceof Error && foreign.code, "session_not_found");
  assert.equal(
    (foreign as BrainError).message.replace(session.id, "ID"),
    (missing as BrainError).message.replace("no-such-session", "ID"),
    "another host's session answers exactly as a missing one",
  );
  await other.sessions.delete(session.id);
  assert.equal((await owner.sessions.list()).length, 1, "another host's delete removed nothing");
});

Deno.test("a token that would break the upgrade request, or a URL that is no server's, is refused by new Brain", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  const url = server.url;
  for (
    const [options, message] of [
      [{ url, token: "secret\r\nx-injected: 1" }, /token must be 1 to 4096 printable ASCII characters/],
      [{ url, token: "secret", serverToken: "operator-secret\n" }, /serverToken must be/],
      [{ url: "not a url", token: "secret" }, /url must be/],
      [{ url: url.replace("http", "ftp"), token: "secret" }, /url must be/],
      [{ url, token: "secret", cluster: ["nope"] }, /cluster must be/],
    ] as const
  ) {
    assert.throws(() => new Brain({ host: "app", ...options }), hasCode("invalid_argument", message));
  }
  assert.equal(server.connections, 0, "no refused client ever connected");
});
