import assert from "node:assert/strict";
import { runDeno } from "./_support/spawn_deno.ts";

/**
 * A JSDoc example is read on JSR (`deno doc` of an entry point), where only the package's own exports
 * (`@aexhq/brain`, `@aexhq/brain/...`) and its dependencies can be imported: an example that imports a file of this
 * repository by a relative path cannot be run by its reader, though `deno test --doc` runs it here.
 */
Deno.test("no JSDoc example of a published entry point imports a module by a relative path", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)));
  const entries = [...new Set(Object.values(config.exports as Record<string, string>))];
  const doc = await runDeno(["doc", "--json", ...entries]);
  assert.ok(doc.success, new TextDecoder().decode(doc.stderr));
  const examples: string[] = [];
  collect(JSON.parse(new TextDecoder().decode(doc.stdout)), examples);
  assert.ok(examples.length > 30, `only ${examples.length} examples found`);
  const relative = examples.flatMap((example) => [...example.matchAll(/^import .* from "\.{1,2}\/[^"]*";$/gm)])
    .map(([line]) => line);
  assert.deepEqual(relative, []);
});

/** Every example text under `node`, wherever `deno doc --json` nests it. */
function collect(node: unknown, examples: string[]): void {
  if (typeof node !== "object" || node === null) return;
  const { kind, doc } = node as { kind?: unknown; doc?: unknown };
  if (kind === "example" && typeof doc === "string") examples.push(doc);
  for (const value of Object.values(node)) collect(value, examples);
}
