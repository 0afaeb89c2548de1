import assert from "node:assert/strict";
import { BrainError } from "../../mod.ts";
import { fetchIssue } from "../../examples/fetch_issue.ts";
import { inspect } from "../../examples/inspect/inspect.ts";
import { lookup } from "../../examples/lookup.ts";
import { inspectToolModule } from "../../src/manifest/mod.ts";

const root = new URL("../../", import.meta.url);
const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url);

async function rejectsWith(specifier: string | URL, code: string, pattern: RegExp): Promise<void> {
  await assert.rejects(inspectToolModule(specifier), (error) => {
    assert.ok(error instanceof BrainError, String(error));
    assert.equal(error.code, code);
    assert.match(error.message, pattern);
    return true;
  });
}

Deno.test("a host Tool's manifest carries its contract and kind, from a path relative to the working directory", async () => {
  const manifest = await inspectToolModule("examples/lookup.ts");
  assert.equal(manifest.module, new URL("examples/lookup.ts", root).href);
  assert.deepEqual(manifest.tools, [{
    exports: ["lookup"],
    name: "lookup",
    description: lookup.description,
    inputSchema: lookup.inputSchema,
    outputSchema: lookup.outputSchema,
    implementation: "host",
  }]);
});

Deno.test("a Component Tool's manifest carries its executable reference resolved against the module", async () => {
  const manifest = await inspectToolModule(new URL("examples/inspect/inspect.ts", root));
  assert.equal(manifest.tools.length, 1);
  const [entry] = manifest.tools;
  assert.equal(entry.implementation, "component");
  assert.deepEqual(entry.inputSchema, inspect.inputSchema);
  assert.deepEqual(entry.outputSchema, inspect.outputSchema);
  assert.deepEqual(entry.component, {
    url: new URL("examples/inspect/inspect.wasm", root).href,
    fromModule: "./inspect.wasm",
  });
});

Deno.test("a Component outside the module's folder is referenced with ../ segments", async () => {
  const [entry] = (await inspectToolModule(fixture("nested/shared_component.ts"))).tools;
  assert.equal(entry.component?.fromModule, "../../../../examples/inspect/inspect.wasm");
  assert.equal(new URL(entry.component!.fromModule!, fixture("nested/shared_component.ts")).href, entry.component!.url);
});

Deno.test("a descriptor Tool's manifest has its kind and no output schema when it declares none", async () => {
  const manifest = await inspectToolModule(new URL("examples/fetch_issue.ts", root));
  assert.deepEqual(manifest.tools, [{
    exports: ["fetchIssue"],
    name: "fetch_issue",
    description: fetchIssue.description,
    inputSchema: fetchIssue.inputSchema,
    implementation: "descriptor",
  }]);
});

Deno.test("one factory exported twice is one Tool; look-alike objects are not Tools", async () => {
  const manifest = await inspectToolModule(fixture("aliases.ts"));
  assert.deepEqual(manifest.tools.map(({ exports, name }) => ({ exports, name })), [{
    exports: ["echo", "repeat"],
    name: "echo",
  }]);
});

Deno.test("a module that exports no Tool is no_tools", async () => {
  await rejectsWith(fixture("no_tools.ts"), "no_tools", /exports no Tool/);
});

Deno.test("two different Tools with one name are duplicate_tool, naming both exports", async () => {
  await rejectsWith(fixture("duplicate.ts"), "duplicate_tool", /first and second are different Tools named echo/);
});

Deno.test("a missing or non-file Component is component_unreadable", async () => {
  await rejectsWith(fixture("missing_component.ts"), "component_unreadable", /ghost\.wasm/);
  await rejectsWith(fixture("directory_component.ts"), "component_unreadable", /is not a file/);
});

Deno.test("a module that cannot be imported is invalid_argument", async () => {
  await rejectsWith(fixture("absent.ts"), "invalid_argument", /cannot import .*absent\.ts/);
});
