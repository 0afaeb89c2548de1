/**
 * The Rust and Python authoring examples, built with their own toolchains and run
 * as the inspect Tool. They run under `deno task test:authoring` where those
 * toolchains exist, and are skipped, saying why, everywhere else. The JavaScript
 * example's componentize-js build (slow: SpiderMonkey) runs here too.
 */
import assert from "node:assert/strict";
import { buildSpiderMonkeyComponent, INSPECT_JS } from "../../examples/inspect/js/build.ts";
import { inspectTool, reader, readerBrain } from "../_support/components.ts";
import { soon } from "../_support/deadline.ts";

const examples = new URL("../../examples/inspect/", import.meta.url);

async function missing(
  commands: string[],
  probe: string[],
  needle: string,
  install: string,
): Promise<string | undefined> {
  for (const command of commands) {
    if (Deno.permissions.querySync({ name: "run", command }).state !== "granted") {
      return `${command} is not on PATH or this run may not start it; set up with \`${install}\` and run deno task test:authoring`;
    }
  }
  try {
    const { stdout, success } = await new Deno.Command(probe[0], { args: probe.slice(1) }).output();
    const text = new TextDecoder().decode(stdout);
    return success && text.includes(needle) ? undefined : `\`${probe.join(" ")}\` does not show ${needle} (${install})`;
  } catch (error) {
    return `${probe[0]} is not installed (${(error as Error).name}; ${install})`;
  }
}

async function build(command: string, args: string[], cwd: URL): Promise<void> {
  const { success, stderr } = await new Deno.Command(command, { args, cwd }).output();
  assert.ok(success, new TextDecoder().decode(stderr));
}

/** The inspect smoke every authored inspect.wasm must pass: list to depth, refuse `..`. */
async function inspectSmoke(url: URL): Promise<void> {
  await using brain = readerBrain();
  const session = await brain.sessions.create({ tools: [inspectTool(url)({ env: reader, depth: 2 })] });
  await Deno.mkdir(`${session.workspace("reader")}/d/e`, { recursive: true });
  const listed = await session.call("inspect", { path: "." }, { deadline: soon() });
  assert.deepEqual(listed.outcome.status === "ok" && listed.outcome.value, {
    eventSequence: 2,
    entries: ["d/", "d/e/"],
  });
  const refused = await session.call("inspect", { path: ".." }, { deadline: soon() });
  assert.equal(refused.outcome.status === "error" && refused.outcome.error.code, "fs_error");
}

const rust = await missing(
  ["rustup", "cargo"],
  ["rustup", "target", "list", "--installed"],
  "wasm32-wasip2",
  "rustup target add wasm32-wasip2",
);
Deno.test({
  name: `the Rust inspect example builds for wasm32-wasip2 and passes${rust ? ` (skipped: ${rust})` : ""}`,
  ignore: rust !== undefined,
  async fn() {
    const dir = new URL("rust/", examples);
    await build("cargo", ["build", "--release", "--target", "wasm32-wasip2"], dir);
    await inspectSmoke(new URL("target/wasm32-wasip2/release/inspect.wasm", dir));
  },
});

const python = await missing(
  ["componentize-py"],
  ["componentize-py", "--version"],
  "componentize-py",
  "pip install componentize-py",
);
Deno.test({
  name: `the Python inspect example builds with componentize-py${python ? ` (skipped: ${python})` : ""}`,
  ignore: python !== undefined,
  async fn() {
    const dir = new URL("python/", examples);
    await build("componentize-py", ["-d", "../wit", "-w", "inspect", "componentize", "app", "-o", "inspect.wasm"], dir);
    await inspectSmoke(new URL("inspect.wasm", dir));
  },
});

Deno.test("the JavaScript inspect example builds with componentize-js (SpiderMonkey) and passes", async () => {
  await Deno.mkdir(new URL("../../.tmp/guests/", import.meta.url), { recursive: true });
  const out = new URL("../../.tmp/guests/inspect-spidermonkey.wasm", import.meta.url);
  await buildSpiderMonkeyComponent({ ...INSPECT_JS, out });
  await inspectSmoke(out);
});
