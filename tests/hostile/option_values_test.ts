import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, component, tool } from "../../mod.ts";
import { PostgresJournal } from "../../src/journal/mod.ts";
import { serveBrain } from "../../src/host/server/mod.ts";
import { toolExtension } from "../../src/extension/mod.ts";
import { serveMcp } from "../../src/mcp/mod.ts";
import { embeddedSession } from "../_support/embedded_session.ts";
import { trap } from "../_support/trap.ts";

/** Values no error message can show by converting them to text: the conversion itself throws. */
const unshowable: [string, () => unknown][] = [
  ["a Symbol", () => Symbol("s")],
  ["a prototype-less object", () => Object.create(null)],
  ["a Proxy", () => trap()],
  ["an array nested 100 000 deep", () => {
    let value: unknown = 1;
    for (let level = 0; level < 100_000; level++) value = [value];
    return value;
  }],
  ["a revoked Proxy", () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  }],
];

Deno.test("hostile option values: a number option given a value whose text conversion throws is invalid_argument everywhere", async () => {
  const echo = tool({ name: "echo", description: "d", input: z.object({}), run: (_input, ctx) => ctx.finish(null) });
  await using session = await embeddedSession([echo()]);
  await using brain = new Brain();
  const pg = "postgres://u:p@127.0.0.1:1/db";
  const options: [string, (value: unknown) => unknown][] = [
    ["Brain leaseMs", (value) => new Brain({ leaseMs: value as number })],
    ["Brain maxEmittedBytes", (value) => new Brain({ maxEmittedBytes: value as number })],
    ["Brain components.maxSandboxes", (value) => new Brain({ components: { maxSandboxes: value as number } })],
    ["call timeoutMs", (value) => session.call("echo", {}, { timeoutMs: value as number })],
    ["call deadline", (value) => session.call("echo", {}, { deadline: value as number })],
    ["sessions.get waitMs", (value) => brain.sessions.get("s", { waitMs: value as number })],
    [
      "serveBrain limits",
      (value) => serveBrain({ serverToken: "operator", limits: { maxFrameBytes: value as number } }),
    ],
    ["toolExtension maxRequestBytes", (value) => toolExtension({ tools: [], maxRequestBytes: value as number })],
    ["toolExtension lifetimeMs", (value) => toolExtension({ tools: [], lifetimeMs: value as number })],
    ["serveMcp maxSessions", (value) => serveMcp(session, { maxSessions: value as number })],
    ["serveMcp sessionIdleMs", (value) => serveMcp(session, { sessionIdleMs: value as number })],
    ["serveMcp deadlineMs", (value) => serveMcp(session, { deadlineMs: value as number })],
    ["PostgresJournal maxConnections", (value) => PostgresJournal.open(pg, { maxConnections: value as number })],
    ["PostgresJournal schema", (value) => PostgresJournal.open(pg, { schema: value as string })],
    ["PostgresJournal idleTransactionMs", (value) => PostgresJournal.open(pg, { idleTransactionMs: value as number })],
    ["component maxBytes", (value) => component("http://127.0.0.1:1/x.wasm", { maxBytes: value as number })],
    [
      "component fetchTimeoutMs",
      (value) => component("http://127.0.0.1:1/x.wasm", { fetchTimeoutMs: value as number }),
    ],
    [
      "a remote Brain's cluster",
      (value) => new Brain({ url: "http://127.0.0.1:1", token: "t", cluster: value as never }),
    ],
    ["serveBrain hostTokens", (value) => serveBrain({ hostTokens: value as never })],
  ];
  const answers: string[] = [];
  for (const [what, give] of options) {
    for (const [shown, value] of unshowable) {
      const answer = await Promise.resolve().then(() => give(value())).then(
        async (made) => {
          await (made as { shutdown?: () => unknown })?.shutdown?.();
          return "accepted";
        },
        (error) => error instanceof BrainError ? error.code : `a bare ${error?.constructor?.name}`,
      );
      if (answer !== "invalid_argument") answers.push(`${what} of ${shown}: ${answer}`);
    }
  }
  assert.deepEqual(answers, []);
});
