import assert from "node:assert/strict";
import { inspectToolModule } from "../../src/manifest/mod.ts";

const root = new URL("../../", import.meta.url);
const EXAMPLES = ["examples/lookup.ts", "examples/fetch_issue.ts", "examples/inspect/inspect.ts"];

interface PackageConfig {
  exports: Record<string, string>;
  exclude?: string[];
  publish: { include: string[]; exclude?: string[] };
}

const readConfig = async (name: string): Promise<PackageConfig> =>
  JSON.parse(await Deno.readTextFile(new URL(name, root)));

/** Whether a publish or exclude entry (a file, or a folder with or without a trailing `/`) covers a repository file. */
function covers(entry: string, file: string): boolean {
  // Globs would need JSR's matcher; refuse them so this check can never silently pass.
  assert.doesNotMatch(entry, /[*?[{]/, `publish entry ${entry} is a glob; extend this test before using one`);
  const path = entry.replace(/^\.\//, "").replace(/\/$/, "");
  return file === path || file.startsWith(`${path}/`);
}

function published(config: PackageConfig, file: string): boolean {
  const excluded = [...config.exclude ?? [], ...config.publish.exclude ?? []];
  return config.publish.include.some((entry) => covers(entry, file)) && !excluded.some((entry) => covers(entry, file));
}

const repoPath = (url: string) =>
  decodeURIComponent(new URL(url).pathname).slice(decodeURIComponent(root.pathname).length);

Deno.test("deno.json (what deno publish reads) and jsr.json declare the same exports and publish set", async () => {
  const deno = await readConfig("deno.json");
  const jsr = await readConfig("jsr.json");
  assert.deepEqual(jsr.exports, deno.exports);
  assert.deepEqual(jsr.publish, deno.publish);
});

Deno.test("every export target is published", async () => {
  const config = await readConfig("deno.json");
  for (const target of Object.values(config.exports)) {
    const file = target.replace(/^\.\//, "");
    assert.ok(published(config, file), `export ${target} is not in publish.include`);
    await Deno.stat(new URL(file, root));
  }
});

Deno.test("every file the examples' manifests reference is published next to its module", async () => {
  const config = await readConfig("deno.json");
  const referenced: string[] = [];
  for (const example of EXAMPLES) {
    const manifest = await inspectToolModule(new URL(example, root));
    referenced.push(repoPath(manifest.module));
    for (const entry of manifest.tools) if (entry.component) referenced.push(repoPath(entry.component.url));
  }
  assert.ok(referenced.includes("examples/inspect/inspect.wasm"), referenced.join(", "));
  for (const file of referenced) assert.ok(published(config, file), `${file} is referenced but not published`);
  assert.ok(published(config, "contracts/tool.wit"), "the WIT contract is not published");
});
