/**
 * wasi:http and wasi:sockets inside a sandbox, against real servers on 127.0.0.1:
 * a guest reaches what its grant's net allow-list names and nothing else. A
 * refused request fails inside the guest and never reaches a server.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { brainEnv, component, tool } from "../../mod.ts";
import { buildJsComponent, buildSpiderMonkeyComponent } from "../../examples/inspect/js/build.ts";
import { readerBrain } from "../_support/components.ts";
import { runningSandboxes } from "../_support/processes.ts";
import { soon } from "../_support/deadline.ts";
import { serve } from "../_support/serve.ts";
import { closing } from "../_support/closing.ts";

const fixture = new URL("./fixtures/fetch_probe/", import.meta.url);

/** Builds the fetch probe with componentize-js once per content of its sources (SpiderMonkey is slow). */
async function fetchProbe(): Promise<URL> {
  const sources = [
    new URL("probe.js", fixture),
    new URL("world.wit", fixture),
    new URL("../../examples/inspect/js/componentize_js.ts", import.meta.url),
  ];
  const text = (await Promise.all(sources.map((url) => Deno.readTextFile(url)))).join("\0");
  const hash = Array.from(
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))).slice(0, 8),
    (byte) => byte.toString(16).padStart(2, "0"),
  ).join("");
  const dir = new URL(`../../.tmp/guests/fetch-probe-${hash}/`, import.meta.url);
  const out = new URL("probe.wasm", dir);
  if (await Deno.stat(out).then(() => true, () => false)) return out;
  await Deno.mkdir(new URL("wit/deps/", dir), { recursive: true });
  await Deno.copyFile(new URL("world.wit", fixture), new URL("wit/world.wit", dir));
  await Deno.copyFile(
    new URL("../../examples/inspect/wit/deps/brain-tool.wit", import.meta.url),
    new URL("wit/deps/brain-tool.wit", dir),
  );
  const staging = new URL(`probe.${crypto.randomUUID()}.wasm`, dir);
  await buildSpiderMonkeyComponent(
    { js: new URL("probe.js", fixture), wit: new URL("wit/", dir), world: "fetch-probe", out: staging },
    ["http"],
  );
  await Deno.rename(staging, out);
  return out;
}

/** A real HTTP server on 127.0.0.1 that records the requests it receives. */
function recordingServer(name: string) {
  const seen: string[] = [];
  const server = serve(async (request) => {
    const url = new URL(request.url);
    seen.push(`${request.method} ${url.pathname}`);
    const body = request.method === "POST" ? await request.text() : "";
    return new Response(`${name} ${request.method} ${url.pathname}${body ? ` ${body}` : ""}`);
  });
  return Object.assign(server, { seen, port: Number(server.host.split(":")[1]) });
}

const PROBE_WASM = await fetchProbe();
const fetcher = tool({
  name: "fetcher",
  description: "fetches its input's url",
  input: z.object({ url: z.string(), method: z.string().optional(), body: z.string().optional() }),
  implementation: component(PROBE_WASM),
});

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
        value: { failed: "Error: fetch_https: An error occurred while using the host API.\n" },
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
    value: { failed: "Error: fetch_https: An error occurred while using the host API.\n" },
  });
  assert.deepEqual(server.seen, []);
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
