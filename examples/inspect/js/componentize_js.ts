/**
 * Builds a JavaScript Component with componentize-js (SpiderMonkey): run by
 * `buildSpiderMonkeyComponent` in a child process as
 * `componentize_js.ts <js> <wit folder> <world> <out>`. Its WASI shim needs its
 * preopens set to reach the files; stdio, random, clocks and http are left
 * out, so the Component imports only what its world names.
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
const [sourcePath, witPath, worldName, out] = Deno.args;
const { component } = await componentize({
  sourcePath,
  witPath,
  worldName,
  disableFeatures: ["stdio", "random", "clocks", "http", "fetch-event"],
});
await Deno.writeFile(out, component);
