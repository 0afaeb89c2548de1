import assert from "node:assert/strict";
import { parse } from "@bytecodealliance/jco-transpile/wasm-tools";
import { component } from "../../mod.ts";
import { PROBE, probeTool, reader, readerBrain } from "../_support/components.ts";
import { soon } from "../_support/deadline.ts";

async function admit(url: URL) {
  await using brain = readerBrain();
  const session = await brain.sessions.create({ tools: [probeTool("echo", component(url))({ env: reader })] });
  return await session.call("echo", { status: "ok", value: 1 }, { deadline: soon() });
}

async function scratch(name: string, bytes: Uint8Array): Promise<URL> {
  await Deno.mkdir(".tmp/components", { recursive: true });
  const path = `.tmp/components/${name}`;
  await Deno.writeFile(path, bytes);
  return new URL(path, `file://${Deno.cwd()}/`);
}

Deno.test("a missing Component file fails session creation with invalid_tool", async () => {
  await assert.rejects(admit(new URL("./fixtures/missing.wasm", import.meta.url)), { code: "invalid_tool" });
});

Deno.test("a file that is not a Component fails session creation with invalid_tool", async () => {
  await assert.rejects(admit(await scratch("garbage.wasm", new TextEncoder().encode("not wasm"))), {
    code: "invalid_tool",
  });
});

Deno.test("a Component importing what no sandbox provides fails with unsupported_runtime naming it", async () => {
  const wat = `(component
    (import "wasi:keyvalue/store@0.2.0" (instance $net (export "instance-network" (func (result u32)))))
    (core module $m (import "net" "f" (func (result i32))) (func (export "g") (result i32) (call 0)))
    (core func $f (canon lower (func $net "instance-network")))
    (core instance $i (instantiate $m (with "net" (instance (export "f" (func $f))))))
    (func (export "g") (result u32) (canon lift (core func $i "g"))))`;
  await assert.rejects(admit(await scratch("keyvalue.wasm", await parse(wat))), {
    code: "unsupported_runtime",
    message: /wasi:keyvalue\/store/,
  });
});

Deno.test("a Component without the brain:tool export fails with invalid_tool", async () => {
  const wat = `(component (core module $m (func (export "f"))) (core instance $i (instantiate $m))
    (func (export "f") (canon lift (core func $i "f"))))`;
  await assert.rejects(admit(await scratch("no-run.wasm", await parse(wat))), {
    code: "invalid_tool",
    message: /brain:tool\/tool@0.2.0/,
  });
});

Deno.test("successful admission is cached on the Component object; a failed one is retried", async () => {
  const url = await scratch("cached.wasm", await Deno.readFile(PROBE));
  const shared = component(url);
  await using brain = readerBrain();
  const placed = probeTool("echo", shared)({ env: reader });
  await brain.sessions.create({ tools: [placed] });
  await Deno.remove(url);
  // The file is gone: a second session only works because admission was cached.
  const session = await brain.sessions.create({ tools: [placed] });
  assert.deepEqual((await session.call("echo", { status: "ok", value: 2 }, { deadline: soon() })).outcome, {
    status: "ok",
    value: 2,
  });
  const fresh = component(url);
  await assert.rejects(brain.sessions.create({ tools: [probeTool("echo", fresh)({ env: reader })] }), {
    code: "invalid_tool",
  });
  await Deno.writeFile(url, await Deno.readFile(PROBE));
  await brain.sessions.create({ tools: [probeTool("echo", fresh)({ env: reader })] });
});

Deno.test("component() needs an absolute URL", () => {
  assert.throws(() => component("relative.wasm"), { code: "invalid_argument" });
});
