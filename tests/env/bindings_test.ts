import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, brainEnv, type Environment, hostEnv, ok, tool } from "../../mod.ts";
import type { Dispatch, Implementation } from "../../src/contract/placement.ts";
import { hasCode } from "../_support/has_code.ts";

/** An implementation that finishes each call with the workspace and grant its dispatch carried. */
function reportsAuthority(): Implementation {
  return {
    kind: "component",
    admit: () => Promise.resolve(),
    execute({ sink, workspace, env }: Dispatch) {
      sink.finish({ outcome: ok({ workspace: workspace ?? null, env: env?.name ?? null }) });
    },
  };
}

const probe = (name: string) =>
  tool({ name, description: "Report authority.", input: z.object({}), implementation: reportsAuthority() });

async function workspaceRoot(): Promise<{ path: string; [Symbol.asyncDispose](): Promise<void> }> {
  const path = `.tmp/bindings-${crypto.randomUUID()}`;
  await Deno.mkdir(path, { recursive: true });
  return { path, [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }) };
}

Deno.test("a grant outside the allow-list fails session creation with permission_denied and stores nothing", async () => {
  await using brain = new Brain({ allow: { net: ["127.0.0.1"] } });
  const env = brainEnv({ name: "net", net: ["example.com"] });
  await assert.rejects(
    brain.sessions.create({ id: "denied", tools: [probe("p")({ env })] }),
    (error) => hasCode("permission_denied")(error) && /example\.com/.test((error as Error).message),
  );
  assert.deepEqual(await brain.sessions.list(), []);
});

Deno.test("the allow-list is read when the Brain is made or opened: an entry the caller adds after grants nothing", async () => {
  await using root = await workspaceRoot();
  for (
    const open of [
      (allow: { net: string[] }) => Promise.resolve(new Brain({ allow })),
      (allow: { net: string[] }) => Brain.open({ path: `${root.path}/${crypto.randomUUID()}.kv`, allow }),
    ]
  ) {
    const allow = { net: ["127.0.0.1"] };
    const opening = open(allow);
    allow.net.push("example.com");
    await using brain = await opening;
    const env = brainEnv({ name: "net", net: ["example.com"] });
    await assert.rejects(brain.sessions.create({ tools: [probe("p")({ env })] }), hasCode("permission_denied"));
  }
});

Deno.test("every Tool in one binding gets its workspace; separate bindings get separate ones", async () => {
  await using root = await workspaceRoot();
  await using brain = new Brain({ allow: { workspaceRoot: root.path, filesystem: ["read", "write"] } });
  const reader = brainEnv({ name: "reader", filesystem: { workspace: "read" } });
  const writer = brainEnv({ name: "writer", filesystem: { workspace: "write" } });
  const session = await brain.sessions.create({
    id: "s1",
    tools: [probe("a")({ env: reader }), probe("b")({ env: reader }), probe("c")({ env: writer })],
  });
  const [a, b, c] = await Promise.all(["a", "b", "c"].map((name) => session.call(name, {})));
  const expected = await Deno.realPath(`${root.path}/s1/reader`);
  assert.deepEqual(a.outcome, { status: "ok", value: { workspace: expected, env: "reader" } });
  assert.deepEqual(b.outcome, a.outcome);
  assert.deepEqual(c.outcome, {
    status: "ok",
    value: { workspace: await Deno.realPath(`${root.path}/s1/writer`), env: "writer" },
  });
  assert.equal(session.workspace("reader"), expected);
});

Deno.test("one binding name with different authority is refused; separate names are the way", async () => {
  await using brain = new Brain({ allow: { net: ["a.test", "b.test"] } });
  const tools = [
    probe("a")({ env: brainEnv({ name: "net", net: ["a.test"] }) }),
    probe("b")({ env: brainEnv({ name: "net", net: ["b.test"] }) }),
  ];
  await assert.rejects(brain.sessions.create({ tools }), hasCode("invalid_argument"));
  const same = [
    probe("a")({ env: brainEnv({ name: "net", net: ["a.test"] }) }),
    probe("b")({ env: brainEnv({ name: "net", net: ["a.test"] }) }),
  ];
  await brain.sessions.create({ tools: same });
});

Deno.test("a descriptor in an Environment that does not interpret it is unsupported_runtime", async () => {
  await using brain = new Brain();
  const fetcher = tool({
    name: "fetcher",
    description: "Fetch.",
    input: z.object({}),
    implementation: () => ({ type: "http_json", method: "GET", path: "/x" }),
  });
  const environments: (Environment | undefined)[] = [hostEnv({ name: "app" }), undefined];
  for (const env of environments) {
    await assert.rejects(brain.sessions.create({ tools: [fetcher({ env })] }), hasCode("unsupported_runtime"));
  }
});
