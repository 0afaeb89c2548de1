import assert from "node:assert/strict";
import { Brain } from "../../mod.ts";
import { mcpEnv } from "../../src/mcp/mod.ts";
import { permissionFlags } from "../../src/env/grants.ts";
import { probeTool, reader } from "../_support/components.ts";
import { hasCode } from "../_support/has_code.ts";
import { DENO } from "../_support/mcp_servers.ts";
import { runningChildren, runningSandboxes } from "../_support/processes.ts";
import { scratchDir } from "../_support/scratch.ts";

// Deno splits `--allow-read=/srv/a,b/ws` into `/srv/a` and `b/ws`, with no escape for the comma: a workspace below
// a folder named `a,b` would grant its sandbox (or MCP server) every file under `/srv/a`.
const dir = scratchDir("hostile_commas");

/** A workspace root reached through a symlink, whose real path holds a comma that the root as given does not. */
async function rootThroughComma(): Promise<string> {
  const real = `${dir}/${crypto.randomUUID()},x`;
  const root = `${dir}/${crypto.randomUUID()}`;
  await Deno.mkdir(real);
  // Deno.symlink needs unscoped read and write; the test task grants running `ln`.
  const { success } = await new Deno.Command("ln", { args: ["-s", await Deno.realPath(real), root] }).output();
  assert.ok(success, "ln -s");
  return root;
}

Deno.test("hostile paths with commas: a workspace root or Component cache holding a comma is invalid_argument where given", () => {
  assert.throws(
    () => new Brain({ allow: { workspaceRoot: `${dir}/a,b`, filesystem: ["read"] } }),
    hasCode("invalid_argument", /workspaceRoot/),
  );
  assert.throws(() => new Brain({ components: { cacheDir: `${dir}/c,d` } }), hasCode("invalid_argument", /cacheDir/));
});

Deno.test("hostile paths with commas: a permission that Deno would split at its comma is refused, never granted as its pieces", () => {
  assert.throws(
    () => permissionFlags({ read: ["/code", "/srv/a,b/ws/s/reader"] }),
    hasCode("unsupported_runtime", /--allow-read/),
  );
  assert.throws(() => permissionFlags({ env: ["A,B"] }), hasCode("unsupported_runtime", /--allow-env/));
  assert.deepEqual(permissionFlags({ read: ["/code", "/w"], net: ["example.com:443"] }), [
    "--allow-read=/code,/w",
    "--allow-net=example.com:443",
  ]);
});

Deno.test("hostile paths with commas: a Component workspace whose real path holds one fails admission unsupported_runtime, no sandbox started", async () => {
  await using brain = new Brain({ allow: { workspaceRoot: await rootThroughComma(), filesystem: ["read"] } });
  await assert.rejects(
    brain.sessions.create({ tools: [probeTool("echo")({ env: reader })] }),
    hasCode("unsupported_runtime", /splits it at its comma/),
  );
  assert.deepEqual(await brain.sessions.list(), [], "no session kept");
  assert.deepEqual(await runningSandboxes(), [], "no sandbox started");
});

Deno.test("hostile paths with commas: an MCP Deno server whose workspace's real path holds one is never started", async () => {
  const server = new URL("./fixtures/hostile_mcp_server.ts", import.meta.url).pathname;
  await using brain = new Brain({
    allow: { run: [DENO], workspaceRoot: await rootThroughComma(), filesystem: ["read"] },
  });
  const env = mcpEnv({ name: "m", command: DENO, args: ["run", server, "names"], filesystem: { workspace: "read" } });
  await assert.rejects(brain.sessions.create({ environments: [env] }), hasCode("unsupported_runtime", /comma/));
  assert.deepEqual(await runningChildren("hostile_mcp_server.ts"), [], "no MCP server started");
});
