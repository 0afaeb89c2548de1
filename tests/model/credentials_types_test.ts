import assert from "node:assert/strict";
import { scratchDir } from "../_support/scratch.ts";
import { runDeno } from "../_support/spawn_deno.ts";

/**
 * The README passes `credentials: { apiKey: Deno.env.get("OPENAI_API_KEY") }`, a `string | undefined`: that must
 * type-check in an app whose compilerOptions set `exactOptionalPropertyTypes` too.
 */
Deno.test("ModelCredentials takes an apiKey read from the environment under exactOptionalPropertyTypes", async () => {
  const dir = scratchDir("credentials-types");
  const types = new URL("../../src/model/types.ts", import.meta.url).href;
  await Deno.writeTextFile(
    `${dir}/deno.json`,
    JSON.stringify({ compilerOptions: { strict: true, exactOptionalPropertyTypes: true } }),
  );
  await Deno.writeTextFile(
    `${dir}/app.ts`,
    `import type { ModelCredentials } from "${types}";\n` +
      `export const credentials: ModelCredentials = { apiKey: Deno.env.get("OPENAI_API_KEY") };\n`,
  );
  const check = await runDeno(["check", "--no-lock", "app.ts"], { cwd: dir });
  assert.ok(check.success, new TextDecoder().decode(check.stderr));
});
