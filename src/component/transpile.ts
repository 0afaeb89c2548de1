import { BrainError } from "../outcome/errors.ts";

/** A Component ready to run: its transpiled glue and compiled core modules. */
export interface Prepared {
  /** Source of the glue module; it exports `instantiate(getCoreModule, imports)`. */
  glue: string;
  /** Compiled core modules by the names the glue asks for. */
  modules: Record<string, WebAssembly.Module>;
  /** Interfaces the Component imports, without versions. */
  imports: string[];
}

/** The interfaces a Component Worker provides. */
export const PROVIDED_IMPORTS: readonly string[] = [
  "brain:tool/host",
  "wasi:filesystem/types",
  "wasi:filesystem/preopens",
];
const EXPORT = "brain:tool/tool@0.2.0";

/**
 * Transpiles a Component's bytes (read from `url`) with jco (in instantiation
 * mode: it gets its imports from the Worker, never from the WASI shims) and
 * compiles its core modules. Fails with `invalid_tool` for a non-Component, and
 * with `unsupported_runtime` when it needs imports no Worker provides.
 */
export async function prepareComponent(url: URL, bytes: Uint8Array): Promise<Prepared> {
  const generated = await transpile(url, bytes);
  const missing = generated.imports.filter((name) => !PROVIDED_IMPORTS.includes(name));
  if (missing.length > 0) {
    throw new BrainError(
      "unsupported_runtime",
      `the Component ${url.href} imports ${missing.join(", ")}; a Component Worker provides only ${
        PROVIDED_IMPORTS.join(", ")
      }`,
      { details: { missing } },
    );
  }
  if (!generated.exports.some(([name]) => name === EXPORT)) {
    throw new BrainError("invalid_tool", `the Component ${url.href} does not export ${EXPORT}`);
  }
  const modules: Record<string, WebAssembly.Module> = {};
  let glue = "";
  for (const [name, content] of generated.files) {
    if (name.endsWith(".wasm")) modules[name] = await WebAssembly.compile(content as Uint8Array<ArrayBuffer>);
    else if (name.endsWith(".js")) glue = new TextDecoder().decode(content);
  }
  return { glue, modules, imports: generated.imports };
}

type Generated = { files: [string, Uint8Array][]; imports: string[]; exports: [string, string][] };

async function transpile(url: URL, bytes: Uint8Array): Promise<Generated> {
  let bindgen;
  try {
    bindgen = await import("@bytecodealliance/jco-transpile/component");
    await bindgen.$init;
  } catch (error) {
    throw new BrainError(
      "unsupported_runtime",
      `cannot load jco to transpile Components (its WASI shim reads the environment: run with --allow-env): ${
        (error as Error).message
      }`,
      { cause: error },
    );
  }
  try {
    return bindgen.generate(bytes, {
      name: "component",
      instantiation: { tag: "async" },
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
  } catch (error) {
    throw new BrainError("invalid_tool", `${url.href} is not a valid Component: ${describe(error)}`, { cause: error });
  }
}

function describe(error: unknown): string {
  const payload = (error as { payload?: unknown })?.payload;
  return typeof payload === "string" ? payload : error instanceof Error ? error.message : String(error);
}
