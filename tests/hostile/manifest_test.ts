import assert from "node:assert/strict";
import { inspectToolModule } from "../../src/manifest/mod.ts";
import { hasCode } from "../_support/has_code.ts";
import { scratchDir } from "../_support/scratch.ts";

const fixture = (name: string) => new URL(`./fixtures/modules/${name}`, import.meta.url);

/** A URL whose `href` throws, as a subclass may override it. */
class UnreadableUrl extends URL {
  override get href(): string {
    throw new Error("href getter");
  }
}

Deno.test("hostile inspectToolModule: a module that throws null or an unreadable Error is invalid_argument", async () => {
  for (const name of ["throws_null.ts", "throws_unreadable.ts"]) {
    await assert.rejects(inspectToolModule(fixture(name)), hasCode("invalid_argument"), name);
  }
});

Deno.test("hostile inspectToolModule: a URL whose href throws is read as a URL; a lone surrogate names no other module", async () => {
  const url = new UnreadableUrl(fixture("throws_null.ts"));
  await assert.rejects(inspectToolModule(url), hasCode("invalid_argument"));
  await assert.rejects(
    inspectToolModule("tests/tools/fixtures/no_tools.ts\ud800"),
    hasCode("invalid_argument", /lone surrogate/),
  );
});

Deno.test("hostile inspectToolModule: a file: URL that is no regular file (a FIFO, a folder) is refused, never read", async () => {
  const dir = scratchDir("hostile_manifest");
  const fifo = `${dir}/tools.ts`;
  assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success);
  for (const specifier of [fifo, new URL("./fixtures/", import.meta.url)]) {
    await assert.rejects(inspectToolModule(specifier), hasCode("invalid_argument", /not a regular file/));
  }
});
