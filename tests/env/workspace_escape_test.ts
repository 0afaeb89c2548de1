import assert from "node:assert/strict";
import { z } from "zod";
import {
  Brain,
  brainEnv,
  BrainError,
  type Dispatch,
  type Environment,
  hostEnv,
  httpEnv,
  type Implementation,
  type JsonValue,
  ok,
  tool,
} from "../../mod.ts";
import { makeWorkspace, removeWorkspace } from "../../src/session/workspaces.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { rawHost } from "../host/raw_host.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { serveBrain } from "../../src/host/server/server.ts";

const BAD_NAMES = [".", "..", ".hidden", "a/b", "../x", "a\0b", "x".repeat(129)];

async function tempRoot(): Promise<{ path: string; [Symbol.asyncDispose](): Promise<void> }> {
  const path = `.tmp/escape-${crypto.randomUUID()}`;
  await Deno.mkdir(path, { recursive: true });
  return { path, [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }) };
}

/** Finishes each call with the workspace its dispatch carried. */
const workspaceProbe: Implementation = {
  kind: "component",
  admit: () => Promise.resolve(),
  execute({ sink, workspace }: Dispatch) {
    sink.finish({ outcome: ok(workspace ?? null) });
  },
};
const probe = tool({
  name: "probe",
  description: "Report the workspace.",
  input: z.object({}),
  implementation: workspaceProbe,
});

Deno.test("every Environment declaration refuses a name that could be a path", () => {
  for (const name of BAD_NAMES) {
    assert.throws(() => hostEnv({ name }), hasCode("invalid_argument"), name);
    assert.throws(() => brainEnv({ name, filesystem: { workspace: "write" } }), hasCode("invalid_argument"), name);
    assert.throws(() => httpEnv({ name, baseUrl: "http://127.0.0.1:1" }), hasCode("invalid_argument"), name);
  }
});

Deno.test("a hand-written Environment named .. is refused at session creation and makes no folder", async () => {
  await using root = await tempRoot();
  await using brain = new Brain({ allow: { workspaceRoot: root.path, filesystem: ["write"] } });
  const sneaky = { ...brainEnv({ name: "ok", filesystem: { workspace: "write" } }), name: ".." } as Environment;
  await assert.rejects(
    brain.sessions.create({ id: "s", tools: [probe({ env: sneaky })] }),
    hasCode("invalid_argument"),
  );
  assert.deepEqual(await brain.sessions.list(), []);
  assert.deepEqual([...Deno.readDirSync(root.path)], []);
});

Deno.test("ctx.environments.create refuses . and .. and leaves the workspace root and its sessions alone", async () => {
  await using root = await tempRoot();
  await using brain = new Brain({ allow: { workspaceRoot: root.path, filesystem: ["write"] } });
  const operate = tool({
    name: "operate",
    description: "Create and delete environments by name.",
    input: z.object({ name: z.string() }),
    run: async ({ name }, ctx) => {
      const seen: JsonValue[] = [];
      for (
        const attempt of [
          () => ctx.environments.create({ kind: "brain", name, filesystem: { workspace: "write" } }),
          () => ctx.environments.delete(name),
        ]
      ) {
        seen.push(
          await attempt().then(() => "done", (error) => error instanceof BrainError ? error.code : String(error)),
        );
      }
      return ctx.finish(seen);
    },
  });
  const neighbour = await brain.sessions.create({
    id: "neighbour",
    tools: [probe({ env: brainEnv({ name: "files", filesystem: { workspace: "write" } }) })],
  });
  const folder = (await neighbour.call("probe", {})).outcome;
  assert.equal(folder.status, "ok");
  await Deno.writeTextFile(`${folder.status === "ok" && folder.value}/keep.txt`, "precious");
  const session = await brain.sessions.create({
    id: "s",
    tools: [operate({ env: brainEnv({ name: "ops", control: ["create", "delete"] }) })],
  });
  for (const name of [".", "..", ".x", "a/b"]) {
    const end = await session.call("operate", { name });
    assert.deepEqual(end.outcome, { status: "ok", value: ["invalid_argument", "environment_not_found"] }, name);
  }
  assert.equal(await Deno.readTextFile(`${root.path}/neighbour/files/keep.txt`), "precious");
});

Deno.test("session ids that could be paths are refused by create, get and delete", async () => {
  await using brain = new Brain();
  for (const id of BAD_NAMES) {
    await assert.rejects(brain.sessions.create({ id }), hasCode("invalid_argument"), id);
    await assert.rejects(brain.sessions.get(id), hasCode("invalid_argument"), id);
    await assert.rejects(brain.sessions.delete(id), hasCode("invalid_argument"), id);
  }
});

Deno.test("a host id that could be a path or holds control characters is refused", async () => {
  await using brain = new Brain();
  for (const id of [...BAD_NAMES, "app\nx", ""]) {
    await assert.rejects(brain.sessions.create({ host: { id, token: "secret" } }), hasCode("invalid_argument"));
  }
  assert.deepEqual(await brain.sessions.list(), []);
});

Deno.test("deleting a session removes its workspace; a new session of the same id starts empty", async () => {
  await using root = await tempRoot();
  await using brain = new Brain({ allow: { workspaceRoot: root.path, filesystem: ["write"] } });
  const env = brainEnv({ name: "files", filesystem: { workspace: "write" } });
  const first = await brain.sessions.create({ id: "reused", tools: [probe({ env })] });
  const end = await first.call("probe", {});
  const workspace = end.outcome.status === "ok" ? end.outcome.value as string : "";
  await Deno.writeTextFile(`${workspace}/secret.txt`, "old");
  await brain.sessions.delete("reused");
  await assert.rejects(Deno.stat(`${root.path}/reused`), Deno.errors.NotFound);

  // Files left by a session whose deletion never reached disk (a crash) are gone for the next owner of the id.
  await Deno.mkdir(`${root.path}/stale/files`, { recursive: true });
  await Deno.writeTextFile(`${root.path}/stale/files/secret.txt`, "old");
  const second = await brain.sessions.create({ id: "stale", tools: [probe({ env })] });
  const again = await second.call("probe", {});
  assert.equal(again.outcome.status, "ok");
  assert.deepEqual([...Deno.readDirSync(`${root.path}/stale/files`)], []);
});

Deno.test("over the wire, a session id that could be a path is invalid_argument, not a lookup", async () => {
  await using server = await servedBrain({ serverToken: "operator-secret" });
  await using brain = new Brain({
    url: server.url,
    serverToken: "operator-secret",
    token: "wire-secret",
    host: "wire",
  });
  for (const id of ["..", ".", "a/b"]) {
    await assert.rejects(brain.sessions.create({ id }), hasCode("invalid_argument"), id);
    await assert.rejects(brain.sessions.get(id), hasCode("invalid_argument"), id);
    await assert.rejects(brain.sessions.delete(id), hasCode("invalid_argument"), id);
  }
});

Deno.test("a workspace whose folder was swapped for a symlink out of the root is refused, and nothing is removed", async () => {
  await using root = await tempRoot();
  await using outside = await tempRoot();
  await Deno.writeTextFile(`${outside.path}/keep.txt`, "precious");
  await Deno.mkdir(`${root.path}/s`);
  const link = new Deno.Command("ln", { args: ["-s", await Deno.realPath(outside.path), `${root.path}/s/files`] });
  assert.ok((await link.output()).success);
  await assert.rejects(makeWorkspace(root.path, "s", "files"), hasCode("permission_denied"));
  await assert.rejects(removeWorkspace(root.path, await Deno.realPath(outside.path)), hasCode("permission_denied"));
  await assert.rejects(removeWorkspace(root.path, await Deno.realPath(root.path)), hasCode("permission_denied"));
  assert.equal(await Deno.readTextFile(`${outside.path}/keep.txt`), "precious");
  assert.ok((await Deno.stat(`${root.path}/s`)).isDirectory);
});

Deno.test("over the raw wire, session ids that could be paths or hold control characters are invalid_argument in every request", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  const raw = await rawHost(server.url, "raw", "raw-token");
  try {
    const tools = [{ name: "t", description: "A Tool.", inputSchema: {}, implementation: "host" }];
    let id = 0;
    for (const session of [...BAD_NAMES, "a\nb", "raw~x"]) {
      for (
        const frame of [
          { op: "create", handle: "h", session, tools },
          { op: "get", handle: "h", session },
          { op: "delete", session },
          { op: "read", session },
          { op: "subscribe", session },
          { op: "wait", session, call: 1 },
          { op: "cancel", session, call: 1 },
          { op: "attach", handles: [{ handle: "h", session }] },
        ]
      ) {
        raw.socket.send(JSON.stringify({ id: ++id, ...frame }));
        const reply = await raw.next() as { error?: { code: string } };
        assert.equal(reply.error?.code, "invalid_argument", `${frame.op} ${JSON.stringify(session)}`);
      }
    }
    assert.deepEqual(await server.journal.listSessions(), [], "nothing was created");
  } finally {
    raw.socket.close();
    await raw.closed;
    await server.shutdown();
  }
});

Deno.test("over the raw wire, an Environment record naming a path or without a description is refused and ends its call", async () => {
  const server = await serveBrain({ serverToken: "operator-secret" });
  const raw = await rawHost(server.url, "raw", "raw-token");
  try {
    const ask = async (frame: Record<string, unknown>) => {
      raw.socket.send(JSON.stringify(frame));
      for (;;) {
        const answer = await raw.next() as { t: string; id?: number; value?: unknown; error?: { code: string } };
        if (answer.t === "reply" && answer.id === frame.id) return answer;
      }
    };
    const tools = [{ name: "t", description: "A Tool.", inputSchema: {}, implementation: "host" }];
    await ask({ id: 1, op: "create", handle: "h", session: "s", tools });
    let id = 1;
    for (
      const body of [
        { kind: "environment_created", environment: "..", description: { kind: "brain", name: "..", grant: {} } },
        { kind: "environment_created", environment: "a\0b", description: { kind: "brain", name: "a\0b" } },
        { kind: "environment_deleted", environment: "." },
        { kind: "environment_created", environment: "fine", description: null },
      ]
    ) {
      const started = await ask({ id: ++id, op: "start", handle: "h", tool: "t", input: {} }) as {
        value: { call: number };
      };
      const call = started.value.call;
      const refused = await ask({ id: ++id, op: "record", session: "s", call, records: [{ ...body, call }] });
      assert.equal(refused.error?.code, "protocol_error", JSON.stringify(body));
      const ended = await ask({ id: ++id, op: "wait", session: "s", call }) as { value: { cause: string } };
      assert.equal(ended.value.cause, "error", "the malformed report ended its call");
    }
    const records = await server.journal.read(hostSessionKey("raw", "s"));
    assert.deepEqual(records.filter((record) => record.kind.startsWith("environment_")), [], "nothing was recorded");
    await ask({ id: ++id, op: "end", handle: "h" });
    assert.equal((await ask({ id: ++id, op: "get", handle: "again", session: "s", tools })).error, undefined);
  } finally {
    raw.socket.close();
    await raw.closed;
    await server.shutdown();
  }
});
