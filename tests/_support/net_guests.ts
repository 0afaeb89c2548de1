import { z } from "zod";
import { component, tool } from "../../mod.ts";
import { buildSpiderMonkeyComponent } from "../../examples/inspect/js/build.ts";
import { serve } from "./serve.ts";

const fixture = new URL("../component/fixtures/fetch_probe/", import.meta.url);

/**
 * The fetch probe (tests/component/fixtures/fetch_probe), built with componentize-js
 * with its `http` feature so that `fetch` goes out through wasi:http. SpiderMonkey
 * is slow to build: the output is kept under .tmp by the content of its sources.
 */
export async function fetchProbe(): Promise<URL> {
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

/** The `fetcher` Tool over the fetch probe at `url`: it fetches its input's `url` and finishes with what happened. */
export function fetcherTool(url: URL) {
  return tool({
    name: "fetcher",
    description: "fetches its input's url",
    input: z.object({ url: z.string(), method: z.string().optional(), body: z.string().optional() }),
    implementation: component(url),
  });
}

/** What the fetch probe finishes with when wasi:http refused its request at `handle`, before any connection. */
export const FETCH_REFUSED = { failed: "Error: fetch_https: An error occurred while using the host API.\n" };

/** A real HTTP server on 127.0.0.1 that records the requests it receives and answers `name METHOD /path [body]`. */
export function recordingServer(name: string) {
  const seen: string[] = [];
  const server = serve(async (request) => {
    const url = new URL(request.url);
    seen.push(`${request.method} ${url.pathname}`);
    const body = request.method === "POST" ? await request.text() : "";
    return new Response(`${name} ${request.method} ${url.pathname}${body ? ` ${body}` : ""}`);
  });
  return Object.assign(server, { seen, port: Number(server.host.split(":")[1]) });
}
