/**
 * Builds the repository's Components from source with npm's jco tooling only:
 * a core module in WAT, the WIT world embedded into it, then `component new`.
 *
 *   deno task build:components
 *
 * @module
 */
import { componentEmbed, componentNew, parse } from "@bytecodealliance/jco-transpile/wasm-tools";

/** One Component built from a WAT core module against a world. */
export interface ComponentSource {
  /** The core module in WAT. */
  wat: URL;
  /** The WIT of the world's own package (it may `include brain:tool/component@0.2.0`). */
  world: URL;
  /** The world's name inside `world`. */
  worldName: string;
  /** Where the built Component is written. */
  out: URL;
}

const root = new URL("../", import.meta.url);
const wasiWit = new URL("examples/inspect/wit/deps/", root);

/** The Components this repository ships and tests. */
export const COMPONENTS: readonly ComponentSource[] = [
  {
    wat: new URL("examples/inspect/inspect.wat", root),
    world: new URL("examples/inspect/wit/world.wit", root),
    worldName: "inspect",
    out: new URL("examples/inspect/inspect.wasm", root),
  },
  {
    wat: new URL("tests/component/fixtures/probe.wat", root),
    world: new URL("tests/component/fixtures/probe.wit", root),
    worldName: "probe",
    out: new URL("tests/component/fixtures/probe.wasm", root),
  },
];

/** Builds one Component and returns its bytes. */
export async function buildComponent(source: ComponentSource): Promise<Uint8Array> {
  const core = await parse(await Deno.readTextFile(source.wat));
  const packages = [
    await Deno.readTextFile(new URL("contracts/tool.wit", root)),
    ...await Promise.all(
      ["io", "clocks", "filesystem"].map((name) => Deno.readTextFile(new URL(`wasi-${name}.wit`, wasiWit))),
    ),
  ];
  // One WIT source: the world's package first, its dependencies as nested package blocks.
  const witSource = [await Deno.readTextFile(source.world), ...packages.map(nested)].join("\n");
  const embedded = await componentEmbed({ binary: core, witSource, world: source.worldName });
  return await componentNew(embedded);
}

/** Turns a file's `package a:b@v;` header into a `package a:b@v { ... }` block. */
function nested(wit: string): string {
  const header = /^package ([^;]+);$/m;
  const match = header.exec(wit);
  if (!match) throw new Error("a WIT file must start with a package header");
  return `package ${match[1]} {\n${wit.replace(header, "")}\n}`;
}

/** The module JSR publishes as `@aexhq/brain/contracts/tool.wit`: the WIT text as a string. */
export async function witModule(): Promise<string> {
  const wit = await Deno.readTextFile(new URL("contracts/tool.wit", root));
  return `/**
 * The native binding specification brain:tool@0.2.0, generated from
 * contracts/tool.wit (which is published beside it) by \`deno task build:components\`.
 *
 * @example
 * \`\`\`ts
 * import { TOOL_WIT } from "@aexhq/brain/contracts/tool.wit";
 * console.log(TOOL_WIT.includes("package brain:tool@0.2.0;")); // true
 * \`\`\`
 *
 * @module
 */

/** The text of contracts/tool.wit. */
export const TOOL_WIT: string = ${JSON.stringify(wit)};
`;
}

if (import.meta.main) {
  await Deno.writeTextFile(new URL("contracts/tool_wit.ts", root), await witModule());
  for (const source of COMPONENTS) {
    const bytes = await buildComponent(source);
    await Deno.writeFile(source.out, bytes);
    console.log(`${source.out.pathname.slice(root.pathname.length)}: ${bytes.byteLength} bytes`);
  }
}
