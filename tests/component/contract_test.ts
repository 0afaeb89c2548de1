import assert from "node:assert/strict";
import { TOOL_WIT } from "../../contracts/tool_wit.ts";

const manifest = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));

Deno.test("JSR publishes contracts/tool.wit as @aexhq/brain/contracts/tool.wit", async () => {
  const file = await Deno.readTextFile(new URL("../../contracts/tool.wit", import.meta.url));
  assert.equal(manifest.exports["./contracts/tool.wit"], "./contracts/tool_wit.ts");
  assert.ok(manifest.publish.include.includes("contracts/tool.wit"));
  assert.equal(TOOL_WIT, file);
  assert.match(TOOL_WIT, /^package brain:tool@0\.2\.0;$/m);
});

Deno.test("native invocation fields are input, options and deadline, never session id or sequence", () => {
  const record = /record invocation \{([^}]*)\}/.exec(TOOL_WIT)?.[1] ?? "";
  const fields = [...record.matchAll(/^\s*([a-z-]+):/gm)].map((match) => match[1]);
  assert.deepEqual(fields, ["tool", "input", "options", "deadline-at-ms"]);
});

Deno.test("the host interface declares emit, emit-result, returned, finish, model and telemetry", () => {
  const host = /interface host \{([\s\S]*?)\n\}/.exec(TOOL_WIT)?.[1] ?? "";
  const functions = [...host.matchAll(/^\s*([a-z-]+): func/gm)].map((match) => match[1]);
  assert.deepEqual(functions, ["emit", "emit-result", "returned", "finish", "model", "telemetry"]);
  assert.match(host, /emit-result: func\(outcome: string,/);
  assert.match(host, /finish: func\(outcome: option<string>,/);
});
