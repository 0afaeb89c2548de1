import assert from "node:assert/strict";
import { inspectToolModule } from "../../src/manifest/mod.ts";

const root = new URL("../../", import.meta.url);
const EXAMPLES = ["examples/lookup.ts", "examples/fetch_issue.ts", "examples/inspect/inspect.ts"];

interface PackageConfig {
  license?: string;
  tasks: Record<string, string>;
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

Deno.test("deno.json is the one package manifest: no jsr.json or package.json repeats it", async () => {
  for (const duplicate of ["jsr.json", "jsr.jsonc", "package.json"]) {
    await assert.rejects(
      Deno.stat(new URL(duplicate, root)),
      Deno.errors.NotFound,
      `${duplicate} would duplicate deno.json, which is what deno publish reads`,
    );
  }
});

Deno.test("the package is MIT licensed and publishes its LICENSE", async () => {
  const config = await readConfig("deno.json");
  assert.equal(config.license, "MIT");
  assert.ok(published(config, "LICENSE"), "LICENSE is not in publish.include");
  const license = await Deno.readTextFile(new URL("LICENSE", root));
  assert.match(license, /^MIT License\n\nCopyright \(c\) 2026 the Brain authors\n/);
});

Deno.test("deno task test lints the docs of, doc-tests and dry-run publishes every export", async () => {
  const config = await readConfig("deno.json");
  const doc = config.tasks.doc.split(/\s+/);
  for (const target of Object.values(config.exports)) {
    const file = target.replace(/^\.\//, "");
    assert.ok(doc.includes(file), `deno task doc does not lint ${file}`);
  }
  assert.match(config.tasks.test, /deno task doc && /);
  assert.match(config.tasks.test, /deno publish --dry-run --allow-dirty && /);
  const test = /deno test --doc (.*)$/.exec(config.tasks.test)?.[1].split(/\s+/).filter((arg) => !arg.startsWith("-"));
  assert.ok(test, "deno task test does not run deno test --doc");
  for (const target of Object.values(config.exports)) {
    const file = target.replace(/^\.\//, "");
    assert.ok(test.some((entry) => covers(entry, file)), `deno task test does not run the examples of ${file}`);
  }
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

Deno.test("the publish workflow runs the suite, then publishes with an OIDC identity for provenance", async () => {
  const workflow = await Deno.readTextFile(new URL(".github/workflows/publish.yml", root));
  assert.match(workflow, /^\s+id-token: write\b/m);
  const steps = [...workflow.matchAll(/^\s+- run: (\S+(?: \S+)*?)(?:\s+#.*)?$/gm)].map((match) => match[1]);
  assert.deepEqual(steps, ["./.ci/run", "deno publish"]);
});
