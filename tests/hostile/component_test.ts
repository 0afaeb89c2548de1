import assert from "node:assert/strict";
import { parse } from "@bytecodealliance/jco-transpile/wasm-tools";
import { buildComponent } from "../../examples/build_components.ts";
import { type CallEnd, Component, component } from "../../mod.ts";
import { probeTool, reader, readerBrain } from "../_support/components.ts";
import { runningSandboxes, within } from "../_support/processes.ts";
import { hasCode } from "../_support/has_code.ts";
import { withDeadline } from "../_support/deadline.ts";
import { trap } from "../_support/trap.ts";

const code = ({ outcome }: CallEnd) => outcome.status === "error" ? outcome.error.code : outcome.status;

async function scratch(name: string, bytes: Uint8Array): Promise<URL> {
  await Deno.mkdir(".tmp/components", { recursive: true });
  await Deno.writeFile(`.tmp/components/${name}`, bytes);
  return new URL(`.tmp/components/${name}`, `file://${Deno.cwd()}/`);
}

/**
 * Guest behaviours no honest Component has, added to the probe fixture as Tools named after them: each passes
 * the host a pointer, a length or bytes it must not trust.
 */
const HOSTILE_OPS: Record<string, string> = {
  finish_invalid_utf8:
    `(call $finish (i32.const 1) (i32.const 400) (i32.const 4) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 2048)) (return (call $ok))`,
  finish_out_of_bounds:
    `(call $finish (i32.const 1) (i32.const 0xFFFF0000) (i32.const 100) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 2048)) (return (call $ok))`,
  finish_2gb_length:
    `(call $finish (i32.const 1) (i32.const 0) (i32.const 0x7FFFFFFF) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 2048)) (return (call $ok))`,
  finish_16mb_string:
    `(drop (memory.grow (i32.const 300))) (call $finish (i32.const 1) (i32.const 0) (i32.const 0x1000000) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 2048)) (return (call $ok))`,
  error_invalid_utf8: `(return (call $err (i32.const 400) (i32.const 4)))`,
  error_out_of_bounds: `(return (call $err (i32.const 0xFFFFFF00) (i32.const 1000)))`,
  return_area_out_of_bounds: `(return (i32.const 0xFFFFFFF0))`,
};

/**
 * Guest behaviours the host refuses without failing the call: each emits what it must not, then emits the code
 * of the refusal as an event kind (with `null` data) and finishes.
 */
const REFUSED_OPS: Record<string, string> = {
  emit_invalid_utf8_kind: `(call $emit (i32.const 400) (i32.const 4) (i32.const 176) (i32.const 4) (i32.const 2048))`,
  emit_nul_kind: `(call $emit (i32.const 404) (i32.const 3) (i32.const 176) (i32.const 4) (i32.const 2048))`,
  emit_empty_kind: `(call $emit (i32.const 168) (i32.const 0) (i32.const 176) (i32.const 4) (i32.const 2048))`,
  emit_invalid_utf8_data: `(call $emit (i32.const 168) (i32.const 5) (i32.const 400) (i32.const 4) (i32.const 2048))`,
};
const reportRefusal = "(if (i32.load8_u (i32.const 2048)) (then (call $emit (i32.load (i32.const 2056)) " +
  "(i32.load (i32.const 2060)) (i32.const 176) (i32.const 4) (i32.const 2048)))) " +
  "(call $finish (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 2048)) " +
  "(return (call $ok))";

async function hostileComponent(): Promise<URL> {
  let data = `  (data (i32.const 400) "\\ff\\fe\\80\\22")\n  (data (i32.const 404) "a\\00b")\n`;
  let branches = "";
  let at = 512;
  const refused = Object.entries(REFUSED_OPS).map(([name, body]) => [name, `${body} ${reportRefusal}`]);
  for (const [name, body] of [...Object.entries(HOSTILE_OPS), ...refused]) {
    data += `  (data (i32.const ${at}) "${name}")\n`;
    branches +=
      `    (if (call $streq (local.get $tool) (local.get $tool_len) (i32.const ${at}) (i32.const ${name.length})) ` +
      `(then ${body}))\n`;
    at += 32;
  }
  const fallback = "    (call $err (i32.const 192) (i32.const 13)))\n)";
  const probe = await Deno.readTextFile(new URL("../component/fixtures/probe.wat", import.meta.url));
  const wat = probe.replace("  (global $count", `${data}  (global $count`).replace(fallback, branches + fallback);
  const source = await scratch("hostile.wat", new TextEncoder().encode(wat));
  const world = new URL("../component/fixtures/probe.wit", import.meta.url);
  return await scratch("hostile.wasm", await buildComponent({ wat: source, world, worldName: "probe", out: source }));
}

Deno.test("hostile Components: bad pointers, lengths and bytes from a guest end each call with a code, no sandbox left", async () => {
  const hostile = component(await hostileComponent());
  {
    await using brain = readerBrain();
    const tools = Object.keys(HOSTILE_OPS).map((name) => probeTool(name, hostile)({ env: reader }));
    const session = await brain.sessions.create({ tools });
    for (const name of Object.keys(HOSTILE_OPS)) {
      const end = await session.call(name, {}, { timeoutMs: 10_000 });
      assert.equal(end.cause, "error", name);
      assert.ok(["invalid_output", "tool_error"].includes(code(end)), `${name}: ${code(end)}`);
      const finished = (await session.read()).filter((record) =>
        record.kind === "tool_call_finished" && record.call === end.call
      );
      assert.equal(finished.length, 1, name);
    }
  }
  await within(5_000, "every sandbox gone", async () => (await runningSandboxes()).length === 0);
});

Deno.test("hostile Components: an event kind of invalid UTF-8, NUL or nothing is refused invalid_argument to the guest, nothing journaled", async () => {
  const hostile = component(await hostileComponent());
  {
    await using brain = readerBrain();
    const tools = Object.keys(REFUSED_OPS).map((name) => probeTool(name, hostile)({ env: reader }));
    const session = await brain.sessions.create({ tools });
    for (const name of Object.keys(REFUSED_OPS)) {
      const end = await session.call(name, {}, { timeoutMs: 10_000 });
      assert.equal(end.cause, "finish", name);
      const events = (await session.read()).filter((record) =>
        record.kind === "tool_event" && record.call === end.call
      );
      assert.deepEqual(events.map((event) => event.kind === "tool_event" && event.event), ["invalid_argument"], name);
    }
  }
  await within(5_000, "every sandbox gone", async () => (await runningSandboxes()).length === 0);
});

Deno.test("hostile Components: a FIFO, a core module, a truncated Component and many unknown imports fail admission with codes", async () => {
  await Deno.mkdir(".tmp/components", { recursive: true });
  const fifo = ".tmp/components/fifo.wasm";
  await Deno.remove(fifo).catch(() => {});
  assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success);
  const valid = await Deno.readFile(new URL("../component/fixtures/probe.wasm", import.meta.url));
  let imports = "";
  for (let index = 0; index < 2_000; index++) {
    imports += `(import "x:y/z${index}@0.1.0" (instance (export "f" (func))))\n`;
  }
  const sources: [string, URL, string][] = [
    ["a FIFO (read forever before)", new URL(fifo, `file://${Deno.cwd()}/`), "invalid_tool"],
    ["a core module", await scratch("core.wasm", await parse('(module (func (export "f")))')), "invalid_tool"],
    ["half a Component", await scratch("half.wasm", valid.slice(0, valid.length >> 1)), "invalid_tool"],
    ["an empty file", await scratch("empty.wasm", new Uint8Array()), "invalid_tool"],
    [
      "2 000 unknown imports",
      await scratch(
        "imports.wasm",
        await parse(
          `(component ${imports} (core module $m (func (export "f"))) (core instance $i (instantiate $m)) ` +
            `(func (export "f") (canon lift (core func $i "f"))))`,
        ),
      ),
      "invalid_tool",
    ],
  ];
  for (const [what, url, expected] of sources) {
    await using brain = readerBrain();
    const creating = brain.sessions.create({ tools: [probeTool("echo", component(url))({ env: reader })] });
    await assert.rejects(withDeadline(creating, what, 10_000), hasCode(expected as never), what);
  }
  await Deno.remove(fifo);
});

Deno.test("hostile component(): unreadable URLs and options, non-function telemetry and unbounded limits are refused", () => {
  const probeTrap = trap();
  const probe = new URL("../component/fixtures/probe.wasm", import.meta.url);
  const refusals: [string, () => unknown][] = [
    ["a Proxy URL", () => component(probeTrap as never)],
    ["Proxy options", () => component(probe, probeTrap as never)],
    ["telemetry: 5", () => component(probe, { telemetry: 5 as never })],
    ["fetchTimeoutMs: 1e300", () => component(probe, { fetchTimeoutMs: 1e300 })],
    ["maxBytes: 1e300", () => component(probe, { maxBytes: 1e300 })],
    ["an unknown option", () => component(probe, { bogus: 1 } as never)],
    ["new Component(5)", () => new Component(5 as never)],
    ["new Component with bytes of a string", () => new Component(probe, {}, "bytes" as never)],
    ["new Component with Proxy bytes", () => new Component(probe, {}, probeTrap as never)],
    ["a URL naming a lone surrogate", () => component("file:///tmp/\ud800.wasm")],
  ];
  for (const [what, attempt] of refusals) assert.throws(attempt, hasCode("invalid_argument"), what);
});
