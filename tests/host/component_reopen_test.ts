import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, component, type PlacedTool, tool } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import type { HostConnectionEvent } from "../../src/host/client/connection.ts";
import { HostSocket } from "../../src/host/client/host_socket.ts";
import { createBrainServer } from "../../src/host/server/server.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { PROBE, probeTool, probeVariant } from "../_support/components.ts";
import { denoScript, waitForKey } from "../_support/deno_script.ts";
import { hasCode } from "../_support/has_code.ts";
import { withDeadline } from "../_support/deadline.ts";
import { scratchDir } from "../_support/scratch.ts";
import { serve } from "../_support/serve.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { rawHost } from "./raw_host.ts";

const APP = "tests/host/fixtures/component_app.ts";
const OPERATOR = "operator-secret";
const dir = scratchDir("component_reopen");

const note = tool({
  name: "note",
  description: "Notes its input.",
  input: z.object({ text: z.string() }),
  run: ({ text }, ctx) => ctx.finish(`noted ${text}`),
});

/** The calls of a session's records, in journal order: each call's Tool, input and how it finished. */
function calls(records: JournalRecord[]): { tool: string; input: unknown; cause: string; outcome: unknown }[] {
  return records.flatMap((record) => {
    if (record.kind !== "tool_call_started") return [];
    const end = records.find((other) => other.kind === "tool_call_finished" && other.call === record.sequence);
    assert.ok(end?.kind === "tool_call_finished", `call ${record.sequence} finished`);
    return [{ tool: record.tool, input: record.input, cause: end.cause, outcome: end.outcome }];
  });
}

/** Resolves once `onConnection` has heard `attached` from `url` (or from any server, `count` times in all). */
function attachments() {
  const events: HostConnectionEvent[] = [];
  const waiting: { done: (events: HostConnectionEvent[]) => boolean; resolve: () => void }[] = [];
  return {
    events,
    onConnection(event: HostConnectionEvent) {
      events.push(event);
      for (const wait of waiting.filter((wait) => wait.done(events))) {
        waiting.splice(waiting.indexOf(wait), 1);
        wait.resolve();
      }
    },
    attached(count: number): Promise<void> {
      const done = (seen: HostConnectionEvent[]) => seen.filter((event) => event.type === "attached").length >= count;
      if (done(events)) return Promise.resolve();
      const { promise, resolve } = Promise.withResolvers<void>();
      waiting.push({ done, resolve });
      return promise;
    },
  };
}

Deno.test("a client process SIGKILLed after calling a remote Component: a new client reopens the session with the same Component and calls it again, both calls journaled in order", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR });
  const session = `killed-${crypto.randomUUID()}`;
  await using app = denoScript(APP, [server.url, "kill-token", "crashy", session], {
    permissions: ["--allow-net=127.0.0.1", `--allow-read=${new URL(".", PROBE).pathname}`],
  });
  const { ended } = await waitForKey(app, "ended") as { ended: { outcome: unknown } };
  assert.deepEqual(ended.outcome, { status: "ok", value: { n: 1 } });
  const status = await app.kill("SIGKILL");
  assert.equal(status.signal, "SIGKILL");

  // A new client process of the same host: the Component's bytes and hash travel again with its get.
  await using brain = new Brain({ url: server.url, token: "kill-token", host: "crashy", takeover: true });
  const reopened = await brain.sessions.get(session, { tools: [probeTool("echo")()] });
  const end = await reopened.call("echo", { status: "ok", value: { n: 2 } });
  assert.deepEqual([end.cause, end.outcome], ["finish", { status: "ok", value: { n: 2 } }]);

  assert.deepEqual(calls(await server.journal.read(hostSessionKey("crashy", session))), [
    {
      tool: "echo",
      input: { status: "ok", value: { n: 1 } },
      cause: "finish",
      outcome: { status: "ok", value: { n: 1 } },
    },
    {
      tool: "echo",
      input: { status: "ok", value: { n: 2 } },
      cause: "finish",
      outcome: { status: "ok", value: { n: 2 } },
    },
  ]);
});

Deno.test("reopening a remote session needs all its original Tools, a Component with its original bytes: another Component under the same name is reattach_mismatch, and nothing is written", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR });
  const options = { url: server.url, serverToken: OPERATOR, token: "mismatch-token", host: "mismatch" };
  const other = await probeVariant(dir, 16);
  {
    await using first = new Brain(options);
    const created = await first.sessions.create({ id: "mixed", tools: [probeTool("echo")(), note()] });
    assert.equal((await created.call("echo", { status: "ok", value: 1 })).cause, "finish");
  }
  const key = hostSessionKey("mismatch", "mixed");
  const before = (await server.journal.read(key)).length;
  await using brain = new Brain(options);
  const refusals: [string, PlacedTool[], RegExp][] = [
    // Same name, same schemas, a Component that behaves the same: other bytes all the same.
    ["other bytes", [probeTool("echo", component(other))(), note()], /tool echo: its sha256 differs/],
    ["the host Tool missing", [probeTool("echo")()], /tool note: it was placed in the session but is missing/],
    ["the Component missing", [note()], /tool echo: it was placed in the session but is missing/],
  ];
  for (const [what, tools, message] of refusals) {
    await assert.rejects(brain.sessions.get("mixed", { tools }), (error: unknown) => {
      assert.ok(error instanceof BrainError, `${what}: ${error}`);
      assert.equal(error.code, "reattach_mismatch", `${what}: ${error.message}`);
      assert.match(error.message, message);
      return true;
    });
  }
  const mismatch = await brain.sessions.get("mixed", { tools: [probeTool("echo", component(other))(), note()] })
    .catch((error) => error);
  assert.deepEqual(mismatch.details?.tool, "echo");
  assert.equal((await server.journal.read(key)).length, before, "a refused reopen writes nothing");

  const restored = await brain.sessions.get("mixed", { tools: [note(), probeTool("echo")()] });
  assert.deepEqual((await restored.call("echo", { status: "ok", value: 2 })).outcome, { status: "ok", value: 2 });
  assert.deepEqual((await restored.call("note", { text: "x" })).outcome, { status: "ok", value: "noted x" });
  assert.deepEqual(
    calls(await server.journal.read(key)).map(({ tool, outcome }) => [tool, outcome]),
    [["echo", { status: "ok", value: 1 }], ["echo", { status: "ok", value: 2 }], ["note", {
      status: "ok",
      value: "noted x",
    }]],
  );
});

Deno.test("a dropped connection: the client reattaches its Component session to the same server and calls it again", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR });
  const watched = attachments();
  await using brain = new Brain({
    url: server.url,
    serverToken: OPERATOR,
    token: "drop-token",
    host: "dropped",
    onConnection: watched.onConnection,
  });
  const session = await brain.sessions.create({ tools: [probeTool("echo")(), note()] });
  assert.equal((await session.call("echo", { status: "ok", value: 1 })).cause, "finish");
  await watched.attached(1);
  assert.equal(server.dropHost("dropped"), true);
  await withDeadline(watched.attached(2), "the client to reattach after the drop", 10_000);
  assert.deepEqual((await session.call("echo", { status: "ok", value: 2 })).outcome, { status: "ok", value: 2 });
  assert.deepEqual((await session.call("note", { text: "y" })).outcome, { status: "ok", value: "noted y" });
  assert.deepEqual(watched.events.filter((event) => event.type === "session_closed"), []);
  assert.deepEqual(calls(await session.read()).map(({ tool, outcome }) => [tool, outcome]), [
    ["echo", { status: "ok", value: 1 }],
    ["echo", { status: "ok", value: 2 }],
    ["note", { status: "ok", value: "noted y" }],
  ]);
});

Deno.test("a restarted server over its KV file: the client reattaches its sessions' Components, each upload in its own frame within maxFrameBytes", async () => {
  const path = `${dir}/restart.kv`;
  // A frame holds one of these Components' bytes, not both: an attach carrying both would be refused.
  const large = await probeVariant(dir, 3_000);
  const maxFrameBytes = 14_000;
  const base64 = async (url: URL) => Math.ceil((await Deno.readFile(url)).length / 3) * 4;
  assert.ok(await base64(PROBE) + await base64(large) > maxFrameBytes);
  const served = { serverToken: OPERATOR, path, leaseMs: 1_000, limits: { maxFrameBytes } };
  let first: Awaited<ReturnType<typeof servedBrain>> | undefined = await servedBrain(served);
  const port = Number(new URL(first.url).port);
  await using second = new AsyncDisposableStack();
  const watched = attachments();
  try {
    await using brain = new Brain({
      url: first.url,
      serverToken: OPERATOR,
      token: "restart-token",
      host: "restarted",
      onConnection: watched.onConnection,
    });
    const small = await brain.sessions.create({ id: "small", tools: [probeTool("echo")()] });
    const big = await brain.sessions.create({ id: "big", tools: [probeTool("echo", component(large))()] });
    for (const session of [small, big]) {
      assert.equal((await session.call("echo", { status: "ok", value: 1 })).cause, "finish");
    }
    await first.shutdown();
    first = undefined;
    second.use(await servedBrain({ ...served, port }));
    // The reconnect declares both handles; the new server had never seen either Component.
    await withDeadline(watched.attached(2), "the client to attach to the restarted server", 10_000);
    for (const session of [small, big]) {
      assert.deepEqual((await session.call("echo", { status: "ok", value: 2 })).outcome, { status: "ok", value: 2 });
    }
    assert.deepEqual(
      watched.events.filter((event) => event.type === "session_closed"),
      [],
      "no handle was given up",
    );
    for (const session of [small, big]) {
      assert.deepEqual(calls(await session.read()).map(({ outcome }) => outcome), [
        { status: "ok", value: 1 },
        { status: "ok", value: 2 },
      ], session.id);
    }
  } finally {
    await first?.shutdown();
  }
});

Deno.test("protocol versions: a server names 3 in its upgrade; a version-1 client reopening a Component session gets unsupported_runtime as before; a client of a server that names no version sends no uploads", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR });
  const named = Promise.withResolvers<number>();
  const socket = new HostSocket(new URL(`${server.url.replace("http", "ws")}/v1/host?host=probe&protocol=3`), {
    authorization: "Bearer version-token",
    "brain-server-token": OPERATOR,
  });
  socket.onopen = () => named.resolve(socket.protocol);
  socket.onclose = () => named.reject(new Error("closed before opening"));
  assert.equal(await named.promise, 3);
  socket.close();

  {
    await using brain = new Brain({ url: server.url, serverToken: OPERATOR, token: "version-token", host: "old" });
    await brain.sessions.create({ id: "component", tools: [probeTool("echo")()] });
  }
  // A version-1 client names no protocol and sends no uploads, as it always did.
  const raw = await rawHost(server.url, "old", "version-token", OPERATOR);
  try {
    const advertised = probeTool("echo")().advertised;
    raw.socket.send(JSON.stringify({ id: 1, op: "get", handle: "h", session: "component", tools: [advertised] }));
    const reply = await raw.next() as { id: number; error?: { code: string; message: string } };
    assert.equal(reply.error?.code, "unsupported_runtime", reply.error?.message);
    assert.match(reply.error!.message, /tool echo is an uploaded Component/);
  } finally {
    raw.socket.close();
    await raw.closed;
  }

  // The same server behind a front that drops its version header reads as an older server: the client refuses the
  // reopen itself, before any upload or get is sent.
  const inner = await createBrainServer({ serverToken: OPERATOR, path: `${dir}/old.kv` });
  await using older = serve(async (request) => {
    const response = await inner.fetch(request);
    response.headers.delete("brain-protocol");
    return response;
  });
  try {
    {
      await using brain = new Brain({ url: older.url, serverToken: OPERATOR, token: "older-token", host: "older" });
      await brain.sessions.create({ id: "component", tools: [probeTool("echo")()] });
      const key = hostSessionKey("older", "component");
      const records = (await inner.journal.read(key)).length;
      await assert.rejects(
        brain.sessions.get("component", { tools: [probeTool("echo")()] }),
        hasCode("unsupported_runtime", /speaks protocol 1/),
      );
      assert.equal((await inner.journal.read(key)).length, records);
    }
  } finally {
    await inner.close();
  }
});

Deno.test("an upload is kept only when its bytes hash to the hash it names; a kept one is no longer lacking", async () => {
  await using server = await servedBrain({ serverToken: OPERATOR, limits: { maxUploadsPerHost: 1 } });
  const bytes = await Deno.readFile(PROBE);
  const sha256 = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)).toHex();
  const raw = await rawHost(server.url, "uploader", "upload-token", OPERATOR);
  const ask = async (frame: Record<string, unknown>) => {
    raw.socket.send(JSON.stringify(frame));
    return await raw.next() as { value?: unknown; error?: { code: string; message: string } };
  };
  try {
    const url = PROBE.href;
    const wrong = await ask({ id: 1, op: "upload", url, sha256, bytes: new Uint8Array([1, 2, 3]).toBase64() });
    assert.equal(wrong.error?.code, "protocol_error");
    assert.match(wrong.error!.message, /do not hash to/);
    assert.equal((await ask({ id: 2, op: "upload", url, sha256, bytes: "%%%" })).error?.code, "protocol_error");
    assert.deepEqual((await ask({ id: 3, op: "lacking", sha256: [sha256] })).value, [sha256]);
    assert.deepEqual(await ask({ id: 4, op: "upload", url, sha256, bytes: bytes.toBase64() }), {
      t: "reply",
      id: 4,
      value: null,
    });
    assert.deepEqual((await ask({ id: 5, op: "lacking", sha256: [sha256] })).value, []);
    // The host's room for distinct Components is spent: another one is refused, the kept one is still accepted.
    const other = await Deno.readFile(await probeVariant(dir, 8));
    const otherHash = new Uint8Array(await crypto.subtle.digest("SHA-256", other)).toHex();
    const refused = await ask({ id: 6, op: "upload", url, sha256: otherHash, bytes: other.toBase64() });
    assert.equal(refused.error?.code, "limit_exceeded");
    assert.equal((await ask({ id: 7, op: "upload", url, sha256, bytes: bytes.toBase64() })).value, null);
  } finally {
    raw.socket.close();
    await raw.closed;
  }
});
