/**
 * Builds a JavaScript Tool Component in a child Deno process, with
 * componentize-qjs (QuickJS: about 2 s, 1.6 MB) or componentize-js
 * (SpiderMonkey: 5-20 s, 12 MB), both from npm. `deno task build:inspect-js`
 * builds the inspect example with componentize-qjs:
 *
 *   deno task build:inspect-js   # writes examples/inspect/js/inspect.wasm
 *
 * @module
 */

/** One JavaScript Component: its source, its WIT folder (with `deps/`) and world, and the output file. */
export interface JsComponentSource {
  /** The ES module implementing the world's exports. */
  js: URL;
  /** A WIT folder: the world's package, its dependencies under `deps/`. */
  wit: URL;
  /** The world's name. */
  world: string;
  /** Where the Component is written. */
  out: URL;
}

/** The componentize-qjs release these examples and tests build with. */
export const COMPONENTIZE_QJS = "npm:componentize-qjs@0.4.5";

/** Builds one Component; throws with componentize-qjs's output when it fails. */
export async function buildJsComponent(source: JsComponentSource): Promise<void> {
  const { success, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-config",
      "--no-lock",
      "--node-modules-dir=none",
      "--allow-read",
      `--allow-write=${new URL(".", source.out).pathname}`,
      "--allow-env",
      "--allow-ffi",
      COMPONENTIZE_QJS,
      ...["--wit", source.wit.pathname, "--js", source.js.pathname, "--world", source.world, "--sync"],
      ...["--output", source.out.pathname],
    ],
  }).output();
  if (!success) {
    const text = new TextDecoder();
    throw new Error(`componentize-qjs failed: ${text.decode(stdout)}${text.decode(stderr)}`);
  }
}

/**
 * Builds one Component with componentize-js (SpiderMonkey): slow (5-20 s). Of
 * its WASI features (`stdio`, `random`, `clocks`, `http`) only `features` are
 * kept; with `http`, the guest's `fetch` goes out through `wasi:http`.
 */
export async function buildSpiderMonkeyComponent(source: JsComponentSource, features: string[] = []): Promise<void> {
  const { success, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-config",
      "--no-lock",
      "--node-modules-dir=none",
      "--allow-all",
      new URL("./componentize_js.ts", import.meta.url).href,
      ...[source.js.pathname, source.wit.pathname, source.world, source.out.pathname, features.join(",")],
    ],
  }).output();
  if (!success) throw new Error(`componentize-js failed: ${new TextDecoder().decode(stderr)}`);
}

/** The inspect example in JavaScript. */
export const INSPECT_JS: JsComponentSource = {
  js: new URL("./inspect.js", import.meta.url),
  wit: new URL("../wit/", import.meta.url),
  world: "inspect",
  out: new URL("./inspect.wasm", import.meta.url),
};

if (import.meta.main) {
  await buildJsComponent(INSPECT_JS);
  console.log(`built ${INSPECT_JS.out.pathname}`);
}
