/**
 * The child process that transpiles a Component with jco, so that jco and its
 * dependencies are never part of an application's module graph or process.
 * Brain runs it as `deno run ... transpile_main.ts <entry directory>` with the
 * Component's bytes on stdin; it writes the transpiled glue and core modules
 * into the entry directory (through a temporary directory and a rename, so a
 * reader never sees half an entry) and prints one JSON line: the entry's
 * {@linkcode TranspiledMeta}, or `{ "error": ... }`.
 *
 * @module
 */
import type { TranspiledMeta } from "./transpiled.ts";

type Generated = { files: [string, Uint8Array][]; imports: string[]; exports: [string, string][] };

async function transpile(bytes: Uint8Array): Promise<Generated> {
  // This child runs with --no-config: only a full specifier resolves here. jco 1.11 is the last generator
  // whose synchronous glue has no component-model-async task bookkeeping: later ones cost ~0.5 ms per call.
  // deno-lint-ignore no-import-prefix
  const bindgen = await import("npm:@bytecodealliance/jco@1.11.2/component");
  return await bindgen.generate(bytes, {
    name: "component",
    instantiation: { tag: "sync" },
    map: [],
    noTypescript: true,
    noNodejsCompat: true,
    tlaCompat: false,
    base64Cutoff: 0,
    validLiftingOptimization: false,
    tracing: false,
    noNamespacedExports: true,
    multiMemory: false,
  }) as Generated;
}

async function main(entry: string): Promise<TranspiledMeta | { error: string }> {
  const bytes = new Uint8Array(await new Response(Deno.stdin.readable).arrayBuffer());
  let generated: Generated;
  try {
    generated = await transpile(bytes);
  } catch (error) {
    const payload = (error as { payload?: unknown })?.payload;
    return { error: typeof payload === "string" ? payload : error instanceof Error ? error.message : String(error) };
  }
  const meta: TranspiledMeta = {
    imports: generated.imports,
    exports: generated.exports.map(([name]) => name),
    glue: "",
    modules: [],
  };
  const staging = `${entry}.${crypto.randomUUID()}`;
  await Deno.mkdir(staging, { recursive: true });
  for (const [name, content] of generated.files) {
    if (name.includes("/")) continue;
    if (name.endsWith(".wasm")) meta.modules.push(name);
    else if (name.endsWith(".js")) meta.glue = name;
    else continue;
    await Deno.writeFile(`${staging}/${name}`, content);
  }
  await Deno.writeTextFile(`${staging}/meta.json`, JSON.stringify(meta));
  try {
    await Deno.rename(staging, entry);
  } catch {
    // Another process wrote the same entry first: its content is the same.
    await Deno.remove(staging, { recursive: true });
  }
  return meta;
}

if (import.meta.main) {
  const result = await main(Deno.args[0]).catch((error) => ({ error: `transpiling failed: ${error}` }));
  console.log(JSON.stringify(result));
}
