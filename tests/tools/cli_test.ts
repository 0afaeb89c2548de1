import assert from "node:assert/strict";
import { inspectToolModule } from "../../src/manifest/mod.ts";
import { runDeno } from "../_support/spawn_deno.ts";

const root = new URL("../../", import.meta.url);

/** Runs `deno task tools ...` in the repository as a real child process. */
async function tools(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await runDeno(["task", "-q", "tools", ...args], { cwd: root });
  const text = new TextDecoder();
  return { code, stdout: text.decode(stdout), stderr: text.decode(stderr) };
}

Deno.test("tools check prints the module's manifest as JSON and exits 0", async () => {
  const { code, stdout, stderr } = await tools("check", "examples/inspect/inspect.ts");
  assert.equal(code, 0, stderr);
  assert.deepEqual(JSON.parse(stdout), await inspectToolModule(new URL("examples/inspect/inspect.ts", root)));
});

Deno.test("tools check prints the error code and message and exits 1 when the module is not publishable", async () => {
  const noTools = await tools("check", "tests/tools/fixtures/no_tools.ts");
  assert.equal(noTools.code, 1);
  assert.equal(noTools.stdout, "");
  assert.match(noTools.stderr, /^no_tools: file:\/\/.*no_tools\.ts exports no Tool/);
  const missing = await tools("check", "tests/tools/fixtures/missing_component.ts");
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^component_unreadable: tool ghost: cannot read the Component/);
});

Deno.test("tools without a command prints usage and exits 2", async () => {
  const { code, stdout, stderr } = await tools("publish", "examples/lookup.ts");
  assert.equal(code, 2);
  assert.equal(stdout, "");
  assert.equal(stderr, "usage: brain-tools check <module>\n");
});
