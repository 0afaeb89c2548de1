/**
 * wasi:http and wasi:sockets inside a sandbox, against real servers on 127.0.0.1:
 * a guest reaches what its grant's net allow-list names and nothing else. A
 * refused request fails inside the guest and never reaches a server.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { brainEnv, component, tool } from "../../mod.ts";
import { buildSpiderMonkeyComponent } from "../../examples/inspect/js/build.ts";
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
    for (const url of [`http://127.0.0.1:${other.port}/c`, `http://localhost:${allowed.port}/d`]) {
      const refused = await fetch({ url });
      assert.ok(refused.status === "ok" && "failed" in (refused.value as object), `${url}: ${JSON.stringify(refused)}`);
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
  assert.ok(
    refused.outcome.status === "ok" && "failed" in (refused.outcome.value as object),
    JSON.stringify(refused.outcome),
  );
  assert.deepEqual(server.seen, []);
});
