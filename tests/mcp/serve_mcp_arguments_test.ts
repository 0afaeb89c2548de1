import assert from "node:assert/strict";
import { Brain } from "../../mod.ts";
import { serveMcp, serveMcpStdio } from "../../src/mcp/mod.ts";
import { hasCode } from "../_support/has_code.ts";

Deno.test("serveMcp and serveMcpStdio given a session's Promise (a forgotten await) or no session say what to give", async () => {
  await using brain = new Brain();
  const pending = brain.sessions.create();
  assert.throws(
    () => serveMcp(pending as never),
    hasCode("invalid_argument", /serveMcp takes a session, and this is a Promise: await brain\.sessions\.create/),
  );
  await assert.rejects(
    serveMcpStdio(pending as never),
    hasCode("invalid_argument", /serveMcpStdio takes a session, and this is a Promise/),
  );
  assert.throws(() => serveMcp(brain as never), hasCode("invalid_argument", /serveMcp takes a session from/));
  assert.equal(typeof serveMcp(await pending).fetch, "function");
});
