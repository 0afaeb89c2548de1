/**
 * Builds a JavaScript Component with componentize-js (SpiderMonkey): run by
 * `buildSpiderMonkeyComponent` in a child process as
 * `componentize_js.ts <js> <wit folder> <world> <out> [features]`. Its WASI
 * shim needs its preopens set to reach the files. Of stdio, random, clocks and
 * http, only the comma-separated `features` are kept (none by default), so the
 * Component imports what its world names and what those need: `http` makes
 * `fetch` go out through `wasi:http`.
 *
 * @module
 */
// This runs with --no-config: only full specifiers resolve here.
// deno-lint-ignore no-import-prefix
import { _setPreopens } from "npm:@bytecodealliance/preview2-shim@0.26/filesystem";
// deno-lint-ignore no-import-prefix
import { componentize } from "npm:@bytecodealliance/componentize-js@0.23.0";

// Its types describe the browser shim; under Deno the Node shim takes host paths.
_setPreopens({ "/": "/" } as never);
const [sourcePath, witPath, worldName, out, features = ""] = Deno.args;
const kept = features.split(",");
const { component } = await componentize({
  sourcePath,
  witPath,
  worldName,
  disableFeatures: [
    ...(["stdio", "random", "clocks", "http"] as const).filter((feature) => !kept.includes(feature)),
    "fetch-event",
  ],
});
await Deno.writeFile(out, component);
