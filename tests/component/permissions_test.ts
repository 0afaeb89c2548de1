import assert from "node:assert/strict";
import { brainEnv } from "../../mod.ts";
import { CHILD_RUN_FLAGS } from "../../src/component/deno_child.ts";
import { componentPermissions } from "../../src/component/permissions.ts";
import { permissionFlags } from "../../src/env/grants.ts";
import { permissionMismatch } from "../../src/component/permission_mismatch.ts";
import { probeTool, reader, readerBrain } from "../_support/components.ts";

Deno.test("a sandbox process started with a read grant's flags reads its workspace and nothing else", async () => {
  await Deno.mkdir(".tmp/ws-perm/reader", { recursive: true });
  const workspace = await Deno.realPath(".tmp/ws-perm/reader");
  await Deno.writeTextFile(".tmp/ws-perm/secret.txt", "secret");
  const outside = await Deno.realPath(".tmp/ws-perm/secret.txt");
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => new Response("reached"));
  const flags = permissionFlags(componentPermissions(reader, workspace));
  assert.deepEqual(flags, [`--allow-read=${workspace}`]);
  const { stdout, success } = await new Deno.Command(Deno.execPath(), {
    args: [
      ...CHILD_RUN_FLAGS,
      ...flags,
      new URL("./fixtures/escape_probe.ts", import.meta.url).href,
      workspace,
      outside,
      `http://127.0.0.1:${server.addr.port}/`,
    ],
  }).output();
  assert.ok(success);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(stdout)), {
    "read workspace": "allowed",
    "read outside": "NotCapable",
    "read parent": "NotCapable",
    "read /proc/self": "NotCapable",
    "write workspace": "NotCapable",
    net: "NotCapable",
    env: "NotCapable",
    run: "NotCapable",
  });
});

Deno.test("grants become exactly their flags: write, net and env only when named", () => {
  const all = brainEnv({ name: "all", filesystem: { workspace: "write" }, net: ["example.com:443"], env: ["A", "B"] });
  assert.deepEqual(permissionFlags(componentPermissions(all, "/w", "/code")), [
    "--allow-read=/code,/w",
    "--allow-write=/w",
    "--allow-net=example.com:443",
    "--allow-env=A,B",
  ]);
  assert.deepEqual(permissionFlags(componentPermissions(undefined, undefined, "/code")), ["--allow-read=/code"]);
  assert.deepEqual(permissionFlags(componentPermissions(undefined, undefined)), []);
});

Deno.test("a denied grant fails session creation with permission_denied", async () => {
  await using brain = readerBrain();
  const writer = brainEnv({ name: "writer", filesystem: { workspace: "write" } });
  await assert.rejects(brain.sessions.create({ tools: [probeTool("echo")({ env: writer })] }), {
    code: "permission_denied",
  });
});

Deno.test("an application without --allow-run gets unsupported_runtime at session creation, naming the flag", async () => {
  const { stdout, success } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read=.", "--allow-write=.tmp", new URL("./fixtures/no_run_app.ts", import.meta.url).href],
  }).output();
  assert.ok(success);
  const reported = JSON.parse(new TextDecoder().decode(stdout));
  assert.equal(reported.name, "BrainError");
  assert.equal(reported.code, "unsupported_runtime");
});

Deno.test("a process holding more than its grant detects it before running a guest", async () => {
  // Checked here, in this test process: it holds --allow-read=. and --allow-env, more than any grant below.
  await Deno.mkdir(".tmp/ws-perm/reader", { recursive: true });
  const workspace = await Deno.realPath(".tmp/ws-perm/reader");
  assert.equal(permissionMismatch(componentPermissions(reader, workspace)), `read of ${workspace}/.. is granted`);
  assert.equal(permissionMismatch(componentPermissions(undefined, undefined)), "env is granted");
  assert.equal(permissionMismatch({ ...componentPermissions(undefined, undefined), env: true, run: true }), undefined);
});
