import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, brainEnv, tool } from "../../mod.ts";
import { hasCode } from "../_support/has_code.ts";
import { inspectTool, reader } from "../_support/components.ts";
import { soon } from "../_support/deadline.ts";
import { chatServer, completion } from "../model/chat_server.ts";
import { SERVE_NET_ENV, SERVER_TOKEN, serverProcess, serveScript } from "../_support/server_process.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { FETCH_REFUSED, fetcherTool, fetchProbe, recordingServer } from "../_support/net_guests.ts";

Deno.test("the serve entry point refuses to start without BRAIN_SERVER_TOKEN or a host tokens file", async () => {
  await using server = serveScript(["--port", "0"], { permissions: SERVE_NET_ENV, env: { BRAIN_SERVER_TOKEN: "" } });
  assert.equal(await server.line(), undefined, "it never listened");
  assert.equal((await server.process.status).code, 2);
});

Deno.test("--host-tokens admits the hosts its file names with their tokens, and no other id", async () => {
  await Deno.mkdir(".tmp", { recursive: true });
  const file = `.tmp/hosts-${crypto.randomUUID()}.json`;
  await Deno.writeTextFile(file, JSON.stringify({ app: "app-token" }));
  try {
    await using server = await serverProcess(["--port", "0", "--host-tokens", file], {
      permissions: [...SERVE_NET_ENV, "--allow-read=.tmp"],
      env: { BRAIN_SERVER_TOKEN: "" },
    });
    await using app = new Brain({ url: server.url, token: "app-token", host: "app" });
    await using stranger = new Brain({ url: server.url, token: "any-token", host: "stranger", serverToken: "guess" });
    assert.deepEqual(await app.sessions.list(), []);
    await assert.rejects(stranger.sessions.list(), hasCode("unauthorized"));
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("--limits sets per-host limits: one session past maxSessionsPerHost is limit_exceeded; a bad one exits 2", async () => {
  await using server = await serverProcess(["--port", "0", "--limits", "maxSessionsPerHost=1, maxCallsPerHost=5"], {
    permissions: SERVE_NET_ENV,
  });
  await using brain = new Brain({ url: server.url, serverToken: SERVER_TOKEN, token: "limited-token", host: "app" });
  await brain.sessions.create({ id: "one" });
  await assert.rejects(brain.sessions.create({ id: "two" }), hasCode("limit_exceeded"));
  for (const limits of ["maxSessionsPerHost=0", "maxSession=3", "maxCallsPerHost", "maxCallsPerHost=1.5"]) {
    await using refused = serveScript(["--port", "0", "--limits", limits], { permissions: SERVE_NET_ENV });
    assert.equal(await refused.line(), undefined, `${limits}: it never listened`);
    assert.equal((await refused.process.status).code, 2, limits);
  }
  await using fromEnv = serveScript(["--port", "0"], {
    permissions: SERVE_NET_ENV,
    env: { BRAIN_LIMITS: "maxHosts=-1" },
  });
  assert.equal((await fromEnv.process.status).code, 2, "BRAIN_LIMITS is checked the same way");
});

Deno.test("the serve entry point runs a Brain server process that hosts a client's Tools", async () => {
  await using server = await serverProcess(["--port", "0"], { permissions: SERVE_NET_ENV });
  const { url } = server;
  const refused = await fetch(`${url}/v1/host?host=app`, { headers: { upgrade: "websocket" } });
  await refused.body?.cancel();
  assert.equal(refused.status, 401);

  const greet = tool({
    name: "greet",
    description: "Greets.",
    input: z.object({ name: z.string() }),
    run: ({ name }, ctx) => ctx.finish({ text: `hello ${name}`, pid: Deno.pid }),
  });
  {
    await using brain = new Brain({ url, serverToken: SERVER_TOKEN, token: "serve-token", host: "app" });
    const session = await brain.sessions.create({ tools: [greet()] });
    const end = await session.call("greet", { name: "Ada" });
    assert.deepEqual(
      end.outcome,
      { status: "ok", value: { text: "hello Ada", pid: Deno.pid } },
      "it ran in this process",
    );
    const listed = await fetch(`${url}/v1/sessions`, { headers: { authorization: `Bearer ${SERVER_TOKEN}` } });
    assert.deepEqual(
      (await listed.json()).sessions.map((listed: { id: string }) => listed.id),
      [hostSessionKey("app", session.id)],
      "the operator credential sees the session in the viewer's API, under the host-scoped key",
    );
  }
  assert.equal((await server.kill("SIGTERM")).code, 0, "SIGTERM shuts the server down cleanly");
});

Deno.test("the serve entry point reads its default model from BRAIN_MODEL_URL, BRAIN_MODEL and BRAIN_MODEL_KEY", async () => {
  await using chat = chatServer([
    {
      reply: completion({
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "greet", arguments: '{"name":"Ada"}' } }],
      }, { finish_reason: "tool_calls" }),
    },
    { reply: completion({ content: "I said hello to Ada." }) },
  ]);
  const key = "serve-model-key";
  await using server = await serverProcess(["--port", "0"], {
    permissions: SERVE_NET_ENV,
    env: { BRAIN_MODEL_URL: chat.baseUrl, BRAIN_MODEL: "served-model", BRAIN_MODEL_KEY: key },
  });
  const greeted: string[] = [];
  const greet = tool({
    name: "greet",
    description: "Greets.",
    input: z.object({ name: z.string() }),
    run: ({ name }, ctx) => {
      greeted.push(name);
      return ctx.finish(`hello ${name}`);
    },
  });
  {
    await using brain = new Brain({
      url: server.url,
      serverToken: SERVER_TOKEN,
      token: "serve-model-token",
      host: "app",
    });
    const session = await brain.sessions.create({ tools: [greet()], model: "default" });
    assert.equal((await session.send("Greet Ada.")).content, "I said hello to Ada.");
    assert.deepEqual(greeted, ["Ada"], "the server's loop called the Tool in this process");
    assert.ok(chat.seen.every((seen) => seen.authorization === `Bearer ${key}` && seen.body.model === "served-model"));
    assert.equal(JSON.stringify(await session.read()).includes(key), false);
  }
  assert.equal((await server.kill("SIGTERM")).code, 0);
});

Deno.test("the serve entry point refuses a model URL without a model name", async () => {
  await using server = serveScript(["--port", "0", "--model-url", "http://127.0.0.1:9/v1"], {
    permissions: SERVE_NET_ENV,
    env: { BRAIN_MODEL: "" },
  });
  assert.equal(await server.line(), undefined, "it never listened");
  assert.equal((await server.process.status).code, 2, "a configuration error exits 2 with its message");
});

Deno.test("the serve entry point runs an uploaded Component under its --workspaces allow-list", async () => {
  await Deno.mkdir(".tmp/serve-components", { recursive: true });
  await using server = await serverProcess(
    ["--port", "0", "--workspaces", ".tmp/serve-components/ws", "--component-cache", ".tmp/serve-components/cache"],
    {
      permissions: [
        ...SERVE_NET_ENV,
        "--allow-read=.tmp/serve-components",
        "--allow-write=.tmp/serve-components",
        "--allow-run",
      ],
    },
  );
  {
    await using brain = new Brain({
      url: server.url,
      serverToken: SERVER_TOKEN,
      token: "serve-token",
      host: "components",
    });
    const session = await brain.sessions.create({ tools: [inspectTool()({ env: reader, depth: 1 })] });
    const end = await session.call("inspect", { path: "." }, { deadline: soon() });
    assert.deepEqual(end.outcome, { status: "ok", value: { eventSequence: 2, entries: [] } });
    const writer = brainEnv({ name: "writer", filesystem: { workspace: "write" } });
    await assert.rejects(
      brain.sessions.create({ tools: [inspectTool()({ env: writer, depth: 1 })] }),
      hasCode("permission_denied"),
    );
  }
  assert.equal((await server.kill("SIGTERM")).code, 0, "SIGTERM shuts the server down cleanly");
});

Deno.test("the serve entry point gives an uploaded Component the network its --net allow-list grants, and no more", async () => {
  await using allowed = recordingServer("allowed");
  await using other = recordingServer("other");
  const fetcher = fetcherTool(await fetchProbe());
  await Deno.mkdir(".tmp/serve-net", { recursive: true });
  await using server = await serverProcess(
    ["--port", "0", "--net", `127.0.0.1:${allowed.port}`, "--component-cache", ".tmp/serve-net/cache"],
    { permissions: [...SERVE_NET_ENV, "--allow-read=.tmp/serve-net", "--allow-write=.tmp/serve-net", "--allow-run"] },
  );
  {
    await using brain = new Brain({ url: server.url, serverToken: SERVER_TOKEN, token: "net-token", host: "net" });
    const net = brainEnv({ name: "net", net: [`127.0.0.1:${allowed.port}`] });
    const session = await brain.sessions.create({ tools: [fetcher({ env: net })] });
    const fetch = async (url: string) => (await session.call("fetcher", { url }, { deadline: soon() })).outcome;
    assert.deepEqual(await fetch(`http://127.0.0.1:${allowed.port}/in`), {
      status: "ok",
      value: { status: 200, body: "allowed GET /in" },
    });
    assert.deepEqual(await fetch(`http://127.0.0.1:${other.port}/out`), { status: "ok", value: FETCH_REFUSED });
    const wider = brainEnv({ name: "net", net: [`127.0.0.1:${other.port}`] });
    await assert.rejects(brain.sessions.create({ tools: [fetcher({ env: wider })] }), hasCode("permission_denied"));
    const bare = await brain.sessions.create({ tools: [fetcher()] });
    assert.deepEqual(
      (await bare.call("fetcher", { url: `http://127.0.0.1:${allowed.port}/bare` }, { deadline: soon() })).outcome,
      { status: "ok", value: FETCH_REFUSED },
    );
  }
  assert.deepEqual(allowed.seen, ["GET /in"]);
  assert.deepEqual(other.seen, []);
  assert.equal((await server.kill("SIGTERM")).code, 0);
});
