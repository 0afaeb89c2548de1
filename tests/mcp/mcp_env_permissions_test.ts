import assert from "node:assert/strict";
import { runDeno } from "../_support/spawn_deno.ts";

Deno.test("mcpEnv: a process without --allow-env for the variables a server is granted fails permission_denied, naming the flag", async () => {
  const run = await runDeno(["run", "--quiet", "--allow-run=deno", "tests/mcp/fixtures/unreadable_env.ts"]);
  const printed = JSON.parse(new TextDecoder().decode(run.stdout));
  assert.equal(printed.brainError, true, new TextDecoder().decode(run.stderr));
  assert.equal(printed.code, "permission_denied");
  assert.match(printed.message, /--allow-env=BRAIN_TEST_A,BRAIN_TEST_B/);
});
