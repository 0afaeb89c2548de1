/**
 * wasi:http and wasi:sockets inside a sandbox, against real servers on 127.0.0.1:
 * a guest reaches what its grant's net allow-list names and nothing else. A
 * refused request fails inside the guest and never reaches a server.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { brainEnv, component, tool } from "../../mod.ts";
import { buildJsComponent } from "../../examples/inspect/js/build.ts";
import { readerBrain } from "../_support/components.ts";
import { runningSandboxes, within } from "../_support/processes.ts";
import { gate } from "../_support/gate.ts";
import { serve } from "../_support/serve.ts";
import { soon } from "../_support/deadline.ts";
import { FETCH_REFUSED, fetcherTool, fetchProbe, recordingServer } from "../_support/net_guests.ts";
import { closing } from "../_support/closing.ts";

const fetcher = fetcherTool(await fetchProbe());

Deno.test("a componentize-js guest's fetch reaches a granted 127.0.0.1 port and no other", async () => {
  await using allowed = recordingServer("allowed");
  await using other = recordingServer("other");
  const net = brainEnv({ name: "net", net: [`127.0.0.1:${allowed.port}`] });
  {
    await using brain = closing(readerBrain({ allow: { net: [`127.0.0.1:${allowed.port}`] } }));
    const session = await brain.sessions.create({ tools: [fetcher({ env: net })] });
    const fetch = async (input: Record<string, string>) =>
      (await session.call("fetcher", input, { deadline: soon() })).outcome;
    assert.deepEqual(await fetch({ url: `http://127.0.0.1:${allowed.port}/a?q=1` }), {
      status: "ok",
      value: { status: 200, body: "allowed GET /a" },
    });
    assert.deepEqual(
      await fetch({ url: `http://127.0.0.1:${allowed.port}/b`, method: "POST", body: "posted" }),
      { status: "ok", value: { status: 200, body: "allowed POST /b posted" } },
    );
    // Refused at wasi:http's handle, before any connection: the guest's fetch fails with the host API's error.
    for (const url of [`http://127.0.0.1:${other.port}/c`, `http://localhost:${allowed.port}/d`]) {
      assert.deepEqual(await fetch({ url }), {
        status: "ok",
        value: FETCH_REFUSED,
      }, url);
    }
    assert.deepEqual(allowed.seen, ["GET /a", "POST /b"]);
    assert.deepEqual(other.seen, []);
  }
  assert.deepEqual(await runningSandboxes(), []);
});

Deno.test("without a net grant a guest importing wasi:http is admitted and every fetch fails inside it", async () => {
  await using server = recordingServer("server");
  await using brain = closing(readerBrain({ allow: { net: [`127.0.0.1:${server.port}`] } }));
  const session = await brain.sessions.create({ tools: [fetcher()] });
  const refused = await session.call("fetcher", { url: `http://127.0.0.1:${server.port}/` }, { deadline: soon() });
  assert.deepEqual(refused.outcome, {
    status: "ok",
    value: FETCH_REFUSED,
  });
  assert.deepEqual(server.seen, []);
});

Deno.test("a guest waiting on a granted server that never answers is killed at its deadline", async () => {
  const answer = gate();
  const arrived = gate();
  await using stalled = serve(async (request) => {
    if (new URL(request.url).pathname === "/warm") return new Response("warm");
    arrived.open();
    await answer.wait;
    return new Response("too late");
  });
  try {
    const net = brainEnv({ name: "net", net: [stalled.host] });
    await using brain = closing(readerBrain({ allow: { net: [stalled.host] }, components: { maxSandboxes: 1 } }));
    const session = await brain.sessions.create({ tools: [fetcher({ env: net })] });
    // A first call warms the sandbox: the stalled call's deadline then covers the wait alone, not a cold start too.
    const warm = await session.call("fetcher", { url: `${stalled.url}/warm` }, { deadline: soon() });
    assert.equal(warm.outcome.status, "ok");
    const call = await session.start("fetcher", { url: `${stalled.url}/` }, { deadline: Date.now() + 2_000 });
    const first = await Promise.race([arrived.wait.then(() => "arrived"), call.ended.then(({ outcome }) => outcome)]);
    assert.equal(first, "arrived", "the call ended before its guest reached the server");
    const waiting = await runningSandboxes();
    assert.equal(waiting.length, 1);
    const [pid] = waiting;
    assert.equal((await call.ended).outcome.status, "timeout");
    await within(1_000, "the waiting sandbox to be killed", async () => !(await runningSandboxes()).includes(pid));
  } finally {
    answer.open();
  }
});

const NET_PROBE = new URL("../../.tmp/guests/net-probe/", import.meta.url);
await Deno.remove(NET_PROBE, { recursive: true }).catch(() => {});
await Deno.mkdir(new URL("wit/deps/", NET_PROBE), { recursive: true });
for (
  const [from, to] of [
    [new URL("../../examples/inspect/wit/deps/brain-tool.wit", import.meta.url), "wit/deps/brain-tool.wit"],
    [new URL("../../examples/inspect/wit/deps/wasi-io.wit", import.meta.url), "wit/deps/wasi-io.wit"],
    [new URL("../../examples/inspect/wit/deps/wasi-clocks.wit", import.meta.url), "wit/deps/wasi-clocks.wit"],
    [new URL("./fixtures/net_probe/wasi-sockets.wit", import.meta.url), "wit/deps/wasi-sockets.wit"],
    [new URL("./fixtures/net_probe/world.wit", import.meta.url), "wit/world.wit"],
  ] as const
) await Deno.copyFile(from, new URL(to, NET_PROBE));
const NET_PROBE_WASM = new URL("probe.wasm", NET_PROBE);
await buildJsComponent({
  js: new URL("./fixtures/net_probe/probe.js", import.meta.url),
  wit: new URL("wit/", NET_PROBE),
  world: "net-probe",
  out: NET_PROBE_WASM,
});
const sockets = tool({
  name: "sockets",
  description: "does with wasi:sockets what its input says",
  input: z.object({
    op: z.string(),
    port: z.number().optional(),
    address: z.array(z.number()).optional(),
    text: z.string().optional(),
    name: z.string().optional(),
  }),
  implementation: component(NET_PROBE_WASM),
});

/** A real TCP server on 127.0.0.1 answering `echo:` and what it read; `closed` counts connections the peer closed. */
function echoServer() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const state = { accepted: 0, closed: 0, onClose: () => {} };
  (async () => {
    for await (const conn of listener) {
      state.accepted++;
      (async () => {
        const buffer = new Uint8Array(1024);
        try {
          for (let read = await conn.read(buffer); read !== null; read = await conn.read(buffer)) {
            await conn.write(new TextEncoder().encode(`echo:${new TextDecoder().decode(buffer.subarray(0, read))}`));
          }
        } catch {
          // Reset by the peer: closed all the same.
        }
        conn.close();
        state.closed++;
        state.onClose();
      })();
    }
  })().catch(() => {});
  const port = (listener.addr as Deno.NetAddr).port;
  return Object.assign(state, { port, [Symbol.dispose]: () => listener.close() });
}

Deno.test("a wasi:sockets guest connects over TCP to a granted port; others fail inside it with access-denied", async () => {
  using echo = echoServer();
  using other = echoServer();
  const granted = brainEnv({ name: "net", net: [`127.0.0.1:${echo.port}`, `localhost:${echo.port}`] });
  await using brain = closing(
    readerBrain({ allow: { net: [`127.0.0.1:${echo.port}`, `localhost:${echo.port}`] } }),
  );
  const session = await brain.sessions.create({ tools: [sockets({ env: granted })] });
  const run = async (input: Record<string, string | number>) =>
    (await session.call("sockets", input, { deadline: soon() })).outcome;
  assert.deepEqual(await run({ op: "tcp", port: echo.port, text: "hello" }), {
    status: "ok",
    value: { ok: "echo:hello" },
  });
  assert.deepEqual(await run({ op: "tcp", port: other.port, text: "x" }), {
    status: "ok",
    value: { refused: "access-denied" },
  });
  assert.deepEqual(await run({ op: "lookup", name: "example.com" }), {
    status: "ok",
    value: { refused: "access-denied" },
  });
  // Deno checks a lookup against the name without a port: `localhost:PORT` does not grant it.
  assert.deepEqual(await run({ op: "lookup", name: "localhost" }), {
    status: "ok",
    value: { refused: "access-denied" },
  });
  assert.deepEqual(await run({ op: "udp" }), { status: "ok", value: { refused: "not-supported" } });
  assert.equal(other.accepted, 0);
});

Deno.test("a guest looks up a granted name and connects to the address it found, as that name", async () => {
  using echo = echoServer();
  const granted = brainEnv({ name: "net", net: ["localhost"] });
  await using brain = closing(readerBrain({ allow: { net: ["localhost"] } }));
  const session = await brain.sessions.create({ tools: [sockets({ env: granted })] });
  const run = async (input: Record<string, string | number>) =>
    (await session.call("sockets", input, { deadline: soon() })).outcome;
  assert.deepEqual(await run({ op: "lookupTcp", name: "localhost", port: echo.port, text: "by name" }), {
    status: "ok",
    value: { ok: "echo:by name" },
  });
  // The address alone, without the lookup in the same call, is not granted.
  assert.deepEqual(await run({ op: "tcp", port: echo.port, text: "x" }), {
    status: "ok",
    value: { refused: "access-denied" },
  });
  assert.equal(echo.accepted, 1);
});

Deno.test("a connection a guest leaves open is closed when its call ends", async () => {
  using echo = echoServer();
  const granted = brainEnv({ name: "net", net: [`127.0.0.1:${echo.port}`] });
  await using brain = closing(readerBrain({ allow: { net: [`127.0.0.1:${echo.port}`] } }));
  const session = await brain.sessions.create({ tools: [sockets({ env: granted })] });
  const closed = new Promise<void>((resolve) => (echo.onClose = resolve));
  assert.deepEqual(
    (await session.call("sockets", { op: "leaveOpen", port: echo.port }, { deadline: soon() })).outcome,
    {
      status: "ok",
      value: { ok: true },
    },
  );
  await closed;
  assert.deepEqual([echo.accepted, echo.closed], [1, 1]);
});

Deno.test("a guest hoarding connections is refused past the per-call limit, and every one is closed at its end", async () => {
  using echo = echoServer();
  const granted = brainEnv({ name: "net", net: [`127.0.0.1:${echo.port}`] });
  await using brain = closing(readerBrain({ allow: { net: [`127.0.0.1:${echo.port}`] } }));
  const session = await brain.sessions.create({ tools: [sockets({ env: granted })] });
  const end = await session.call("sockets", { op: "hoard", port: echo.port }, { deadline: soon() });
  const { opened, refused } =
    (end.outcome.status === "ok" && (end.outcome.value as { ok: { opened: number; refused: string } }).ok) || {};
  assert.equal(refused, "new-socket-limit", JSON.stringify(end.outcome));
  assert.ok(opened! >= 50 && opened === echo.accepted, `${opened} opened, ${echo.accepted} accepted`);
  await within(5_000, "every hoarded connection to close", () => Promise.resolve(echo.closed === echo.accepted));
});

Deno.test("without a net grant every socket use fails inside the guest with access-denied", async () => {
  using echo = echoServer();
  await using brain = closing(readerBrain({ allow: { net: [`127.0.0.1:${echo.port}`, "localhost"] } }));
  const session = await brain.sessions.create({ tools: [sockets()] });
  const inputs: Record<string, string | number>[] = [
    { op: "tcp", port: echo.port, text: "x" },
    { op: "lookup", name: "localhost" },
  ];
  for (const input of inputs) {
    assert.deepEqual((await session.call("sockets", input, { deadline: soon() })).outcome, {
      status: "ok",
      value: { refused: "access-denied" },
    }, JSON.stringify(input));
  }
  assert.equal(echo.accepted, 0);
});
