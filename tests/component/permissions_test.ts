import assert from "node:assert/strict";
import { brainEnv } from "../../mod.ts";
import { componentPermissions, permissionMismatch } from "../../src/component/permissions.ts";
import { probeTool, reader, readerBrain } from "./helpers.ts";

Deno.test("a Component Worker gets its workspace read grant and nothing else", async () => {
  await Deno.mkdir(".tmp/ws-perm/reader", { recursive: true });
  const workspace = await Deno.realPath(".tmp/ws-perm/reader");
  await Deno.writeTextFile(".tmp/ws-perm/secret.txt", "secret");
  const outside = await Deno.realPath(".tmp/ws-perm/secret.txt");
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => new Response("reached"));
  const worker = new Worker(new URL("./fixtures/escape_worker.ts", import.meta.url), {
    type: "module",
    deno: { permissions: componentPermissions(reader, workspace) },
  });
  try {
    const report = await new Promise<Record<string, string>>((resolve, reject) => {
      worker.onmessage = ({ data }) => resolve(data);
      worker.onerror = (event) => reject(new Error(event.message));
      worker.postMessage({
        workspace,
        outside,
        url: `http://127.0.0.1:${server.addr.port}/`,
      });
    });
    assert.deepEqual(report, {
      "read workspace": "allowed",
      "read outside": "NotCapable",
      "read parent": "NotCapable",
      "write workspace": "NotCapable",
      net: "NotCapable",
      env: "NotCapable",
      run: "NotCapable",
    });
  } finally {
    worker.terminate();
    await server.shutdown();
  }
});

Deno.test("without a Brain Environment a Component Worker gets no permission at all", () => {
  const permissions = componentPermissions(undefined, undefined);
  assert.deepEqual(Object.values(permissions), Object.values(permissions).map(() => false));
});

Deno.test("a denied grant fails session creation with permission_denied", async () => {
  const brain = readerBrain();
  try {
    const writer = brainEnv({ name: "writer", filesystem: { workspace: "write" } });
    await assert.rejects(brain.sessions.create({ tools: [probeTool("echo")({ env: writer })] }), {
      code: "permission_denied",
    });
  } finally {
    await brain.close();
  }
});

Deno.test("a grant this process cannot pass to a Worker fails admission with unsupported_runtime", async () => {
  const brain = readerBrain({ allow: { net: ["203.0.113.7:9"] } });
  try {
    const net = brainEnv({ name: "net", net: ["203.0.113.7:9"] });
    await assert.rejects(brain.sessions.create({ tools: [probeTool("echo")({ env: net })] }), {
      code: "unsupported_runtime",
      message: /escalate parent thread permissions/,
    });
  } finally {
    await brain.close();
  }
});

Deno.test("a Worker holding more than its grant detects it before running a guest", async () => {
  // Checked here, in this test process: it holds --allow-read=. and --allow-env, more than any grant below.
  await Deno.mkdir(".tmp/ws-perm/reader", { recursive: true });
  const workspace = await Deno.realPath(".tmp/ws-perm/reader");
  assert.equal(permissionMismatch(componentPermissions(reader, workspace)), `read of ${workspace}/.. is granted`);
  assert.equal(permissionMismatch(componentPermissions(undefined, undefined)), "env is granted");
  assert.equal(permissionMismatch({ ...componentPermissions(undefined, undefined), env: true }), undefined);
});
