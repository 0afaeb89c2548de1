import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, tool } from "../../mod.ts";
import { createBrainServer } from "../../src/host/server/mod.ts";
import { extensionEnv, toolExtension } from "../../src/extension/mod.ts";
import { MemoryJournal } from "../../src/journal/mod.ts";
import { createViewer } from "../../src/viewer/viewer.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { withDeadline } from "../_support/deadline.ts";

const OPERATOR = "operator-secret";

/** Tokens no side accepts: too long, wider than ASCII, with control characters, padded, empty or no string. */
const badTokens: [string, unknown][] = [
  ["a megabyte", "t".repeat(1024 * 1024)],
  ["4097 characters", "t".repeat(4097)],
  ["non-ASCII", "tökén"],
  ["CJK", "令牌"],
  ["a lone surrogate", "a\ud800"],
  ["CR LF", "a\r\nx-injected: 1"],
  ["NUL", "a\0b"],
  ["DEL", "a\x7fb"],
  ["a tab", "a\tb"],
  ["a trailing space", "secret "],
  ["a leading space", " secret"],
  ["empty", ""],
  ["a number", 7],
  ["a String object", new String("secret")],
];

const isInvalid = (error: unknown) => error instanceof BrainError && error.code === "invalid_argument";
const echo = tool({ name: "echo", description: "Echo.", input: z.object({}), run: (_input, ctx) => ctx.finish(null) });

Deno.test("hostile tokens: every side refuses a token that cannot travel as a header with invalid_argument, never echoing it", async () => {
  for (const [what, token] of badTokens) {
    const where = (side: string) => `${side}: ${what}`;
    const refuses = (side: string, make: () => unknown) => {
      assert.throws(make, (error) => isInvalid(error) && !(error as Error).message.includes("tttttttt"), where(side));
    };
    refuses("a remote Brain's token", () => new Brain({ url: "http://127.0.0.1:1", token: token as string }));
    refuses(
      "a remote Brain's serverToken",
      () => new Brain({ url: "http://127.0.0.1:1", token: "t", serverToken: token as string }),
    );
    for (const options of [{ serverToken: token as string }, { hostTokens: { app: token as string } }]) {
      await assert.rejects(createBrainServer(options), isInvalid, where(`a server's ${Object.keys(options)[0]}`));
    }
    refuses("a viewer's operatorToken", () => createViewer(new MemoryJournal(), { operatorToken: token as string }));
    refuses("a toolExtension's token", () => toolExtension({ tools: [echo()], token: token as string }));
    refuses(
      "an extensionEnv's token",
      () => extensionEnv({ name: "x", url: "http://127.0.0.1:1", token: token as string }),
    );
    await using brain = new Brain();
    const created = await brain.sessions.create({ tools: [echo()], host: { id: "app", token: token as string } })
      .then(() => "created", (error) => error);
    assert.ok(isInvalid(created), where(`an embedded session's host token: ${created}`));
    assert.deepEqual(await brain.sessions.list(), [], where("a session was stored"));
  }
});

/** Writes `head` as one request to `url` and returns the status line of the answer. */
async function statusOf(url: string, head: Uint8Array): Promise<string> {
  const { hostname, port } = new URL(url);
  using connection = await Deno.connect({ hostname, port: Number(port) });
  await connection.write(head);
  const buffer = new Uint8Array(4096);
  const read = await withDeadline(connection.read(buffer), "the answer");
  return read === null ? "closed" : new TextDecoder().decode(buffer.subarray(0, read)).split("\r\n")[0];
}

Deno.test("hostile tokens: a served Brain answers oversized, non-ASCII and malformed credentials 401 (or 400), unauthorized", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR, pingIntervalMs: 60_000 });
  const upgrade = {
    upgrade: "websocket",
    connection: "upgrade",
    "sec-websocket-version": "13",
    "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
  };
  const huge = "t".repeat(40_000);
  const cases: [string, string, Record<string, string>][] = [
    ["a huge host token", "/v1/host?host=app", { ...upgrade, authorization: `Bearer ${huge}` }],
    ["a huge operator token", "/v1/host?host=app", {
      ...upgrade,
      authorization: "Bearer t",
      "brain-server-token": huge,
    }],
    ["an operator token of Latin-1", "/v1/host?host=app", {
      ...upgrade,
      authorization: "Bearer t",
      "brain-server-token": `${OPERATOR}\xe9`,
    }],
    ["a huge viewer bearer", "/v1/sessions", { authorization: `Bearer ${huge}` }],
    ["a huge viewer basic", "/v1/sessions", { authorization: `Basic ${btoa(`app:${huge}`)}` }],
    ["a basic pair without a token", "/v1/sessions", { authorization: `Basic ${btoa("app:")}` }],
    ["a basic pair of Latin-1", "/v1/sessions", { authorization: `Basic ${btoa("app:\xe9\xff")}` }],
    ["a cookie of a huge token", "/v1/sessions", { cookie: `brain_viewer=Bearer%20${huge}` }],
  ];
  for (const [what, path, headers] of cases) {
    const response = await fetch(server.url + path, { headers });
    assert.equal(response.status, 401, what);
    assert.equal((await response.json()).error.code, "unauthorized", what);
  }
  const raw = (value: number[]) =>
    new Uint8Array([
      ...new TextEncoder().encode("GET /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "),
      ...value,
      ...new TextEncoder().encode("\r\nConnection: close\r\n\r\n"),
    ]);
  for (const bytes of [[0xff, 0xfe, 0x41], [0xc3, 0xa9], [0x01, 0x02]]) {
    const status = await statusOf(server.url, raw(bytes));
    assert.match(status, /^HTTP\/1\.1 40[01] /, `raw header bytes ${bytes}`);
  }
  const health = await fetch(`${server.url}/v1/health`);
  assert.equal(health.status, 200, "the server still serves");
  await health.body?.cancel();
});
