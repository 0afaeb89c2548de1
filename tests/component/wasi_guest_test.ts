/**
 * Guests from a real toolchain: JavaScript built with componentize-qjs (npm), whose
 * output imports wasi:cli, wasi:io, wasi:clocks, wasi:random and wasi:filesystem.
 * Each runs in its sandbox with WASI scoped to its grant.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { brainEnv, component, type TelemetryEntry, tool } from "../../mod.ts";
import { buildJsComponent, INSPECT_JS } from "../../examples/inspect/js/build.ts";
import { inspectTool, reader, readerBrain } from "../_support/components.ts";
import { runningSandboxes, within } from "../_support/processes.ts";
import { soon } from "../_support/deadline.ts";

const dir = new URL("../../.tmp/guests/", import.meta.url);
const fixture = new URL("./fixtures/wasi_probe/", import.meta.url);
const probeWit = new URL("wasi-probe-wit/", dir);
await Deno.remove(probeWit, { recursive: true }).catch(() => {});
await Deno.mkdir(new URL("deps/", probeWit), { recursive: true });
for (const entry of Deno.readDirSync(new URL("../../examples/inspect/wit/deps/", import.meta.url))) {
  await Deno.copyFile(
    new URL(`../../examples/inspect/wit/deps/${entry.name}`, import.meta.url),
    new URL(`deps/${entry.name}`, probeWit),
  );
}
await Deno.copyFile(new URL("wasi-cli.wit", fixture), new URL("deps/wasi-cli.wit", probeWit));
await Deno.copyFile(new URL("world.wit", fixture), new URL("world.wit", probeWit));
const INSPECT_JS_WASM = new URL("inspect-js.wasm", dir);
const WASI_PROBE = new URL("wasi-probe.wasm", dir);
await Promise.all([
  buildJsComponent({ ...INSPECT_JS, out: INSPECT_JS_WASM }),
  buildJsComponent({ js: new URL("probe.js", fixture), wit: probeWit, world: "wasi-probe", out: WASI_PROBE }),
]);

const WASI_NOT_PERMITTED = 31;
const writer = brainEnv({ name: "writer", filesystem: { workspace: "write" } });
const envReader = brainEnv({ name: "env", env: ["BRAIN_PROBE_GRANTED"] });

function wasiProbe(telemetry?: (entry: TelemetryEntry) => void) {
  return tool({
    name: "probe",
    description: "does what its input says",
    input: z.object({ op: z.string(), path: z.string().optional(), text: z.string().optional() }),
    implementation: component(WASI_PROBE, { telemetry }),
  });
}

/** Deno.symlink needs unscoped read and write; the test task grants `ln` instead. */
async function symlink(target: string, path: string): Promise<void> {
  const { success } = await new Deno.Command("ln", { args: ["-s", target, path] }).output();
  assert.ok(success, `ln -s ${target} ${path}`);
}

Deno.test("the JavaScript inspect example (componentize-qjs) lists its workspace and refuses escapes", async () => {
  await using brain = readerBrain();
  const session = await brain.sessions.create({ tools: [inspectTool(INSPECT_JS_WASM)({ env: reader, depth: 2 })] });
  await Deno.mkdir(`${session.workspace("reader")}/d/e`, { recursive: true });
  const listed = await session.call("inspect", { path: "." }, { deadline: soon() });
  assert.deepEqual(listed.outcome.status === "ok" && listed.outcome.value, {
    eventSequence: 2,
    entries: ["d/", "d/e/"],
  });
  for (const path of ["..", "/", "/etc", "d/../.."]) {
    const refused = await session.call("inspect", { path }, { deadline: soon() });
    assert.deepEqual(
      refused.outcome.status === "error" && refused.outcome.error.details,
      { errno: WASI_NOT_PERMITTED },
      path,
    );
  }
});

Deno.test("a WASI guest on a read grant reads its workspace and nothing else, and cannot write", async () => {
  const outside = await Deno.realPath(await Deno.makeTempDir({ dir: ".tmp", prefix: "outside-" }));
  await Deno.writeTextFile(`${outside}/secret.txt`, "secret");
  const brain = readerBrain();
  try {
    const session = await brain.sessions.create({ tools: [wasiProbe()({ env: reader })] });
    const workspace = session.workspace("reader")!;
    await Deno.writeTextFile(`${workspace}/note.txt`, "inside");
    await symlink(`${outside}/secret.txt`, `${workspace}/link.txt`);
    const run = async (input: Record<string, string>) =>
      (await session.call("probe", input, { deadline: soon() })).outcome;
    assert.deepEqual(await run({ op: "read", path: "note.txt" }), { status: "ok", value: { ok: "inside" } });
    for (const path of ["../../outside/secret.txt", `${outside}/secret.txt`, "/proc/self/environ", "link.txt"]) {
      assert.deepEqual(await run({ op: "read", path }), { status: "ok", value: { refused: "not-permitted" } }, path);
    }
    assert.deepEqual(await run({ op: "write", path: "new.txt", text: "x" }), {
      status: "ok",
      value: { refused: "read-only" },
    });
    assert.deepEqual(await run({ op: "mkdir", path: "d" }), { status: "ok", value: { refused: "read-only" } });
    await assert.rejects(Deno.stat(`${workspace}/new.txt`), Deno.errors.NotFound);
  } finally {
    await brain.close();
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("a call runs under the grant its session admitted, though the Environment's grant object changes later", async () => {
  // An Environment of the application's own making, whose grant it widens past the Brain's allow-list afterwards.
  const grant = { filesystem: { workspace: "read" }, net: [] as string[] };
  const changing = { ...reader, grant, describe: () => ({ kind: "brain", name: "reader", grant }) } as typeof reader;
  await using brain = readerBrain();
  const session = await brain.sessions.create({ tools: [wasiProbe()({ env: changing })] });
  const workspace = session.workspace("reader")!;
  const write = async () =>
    (await session.call("probe", { op: "write", path: "new.txt", text: "x" }, { deadline: soon() })).outcome;
  assert.deepEqual(await write(), { status: "ok", value: { refused: "read-only" } });
  grant.filesystem.workspace = "write";
  grant.net.push("127.0.0.1");
  assert.deepEqual(await write(), { status: "ok", value: { refused: "read-only" } });
  await assert.rejects(Deno.stat(`${workspace}/new.txt`), Deno.errors.NotFound);
});

Deno.test("a WASI guest on a write grant writes inside its workspace only", async () => {
  await using brain = readerBrain({ allow: { workspaceRoot: ".tmp/ws", filesystem: ["read", "write"] } });
  const session = await brain.sessions.create({ tools: [wasiProbe()({ env: writer })] });
  const workspace = session.workspace("writer")!;
  await symlink("/tmp", `${workspace}/out`);
  const run = async (input: Record<string, string>) =>
    (await session.call("probe", input, { deadline: soon() })).outcome;
  assert.deepEqual(await run({ op: "mkdir", path: "d" }), { status: "ok", value: { ok: true } });
  assert.deepEqual(await run({ op: "write", path: "d/out.txt", text: "written" }), {
    status: "ok",
    value: { ok: 7 },
  });
  assert.equal(await Deno.readTextFile(`${workspace}/d/out.txt`), "written");
  for (const path of ["../escape.txt", "/tmp/escape.txt", "out/escape.txt"]) {
    const outcome = await run({ op: "write", path, text: "x" });
    assert.deepEqual(outcome, { status: "ok", value: { refused: "not-permitted" } }, path);
  }
});

Deno.test("a WASI guest sees only the environment variables its grant names", async () => {
  Deno.env.set("BRAIN_PROBE_GRANTED", "granted-value");
  Deno.env.set("BRAIN_PROBE_SECRET", "secret-value");
  const brain = readerBrain({ allow: { env: ["BRAIN_PROBE_GRANTED"] } });
  try {
    const session = await brain.sessions.create({
      tools: [wasiProbe()({ env: envReader })],
    });
    const granted = await session.call("probe", { op: "env" }, { deadline: soon() });
    assert.deepEqual(granted.outcome, { status: "ok", value: { ok: [["BRAIN_PROBE_GRANTED", "granted-value"]] } });
    const bare = await readerBrain().sessions.create({ tools: [wasiProbe()()] });
    assert.deepEqual((await bare.call("probe", { op: "env" }, { deadline: soon() })).outcome, {
      status: "ok",
      value: { ok: [] },
    });
    await bare.end();
  } finally {
    await brain.close();
    Deno.env.delete("BRAIN_PROBE_GRANTED");
    Deno.env.delete("BRAIN_PROBE_SECRET");
  }
});

Deno.test("a WASI guest's stdout reaches telemetry, never the journal", async () => {
  const entries: TelemetryEntry[] = [];
  await using brain = readerBrain();
  const session = await brain.sessions.create({ tools: [wasiProbe((entry) => entries.push(entry))()] });
  const printed = await session.call("probe", { op: "print", text: "printed-by-guest" }, { deadline: soon() });
  assert.deepEqual(printed.outcome, { status: "ok", value: { ok: true } });
  assert.deepEqual(entries.map((entry) => [entry.level, entry.message.trim()]), [["stdout", "printed-by-guest"]]);
  const after = (await session.read()).filter((record) => record.kind !== "tool_call_started");
  assert.ok(!JSON.stringify(after).includes("printed-by-guest"));
});

Deno.test("a WASI guest spinning in JavaScript is killed at its deadline; one allocating stops at the cap", async () => {
  const brain = readerBrain({ components: { memoryMb: 64 } });
  try {
    const session = await brain.sessions.create({ tools: [wasiProbe()()] });
    const spin = await session.call("probe", { op: "spin" }, { deadline: Date.now() + 1_000 });
    assert.equal(spin.outcome.status, "timeout");
    await within(1_000, "the spinning sandbox to be killed", async () => (await runningSandboxes(true)).length === 0);
    const alloc = await session.call("probe", { op: "alloc" }, { deadline: soon() });
    assert.ok(
      alloc.outcome.status === "error" && alloc.outcome.error.code === "resource_exhausted" ||
        alloc.outcome.status === "ok" && /memory/i.test(JSON.stringify(alloc.outcome)),
      JSON.stringify(alloc.outcome),
    );
  } finally {
    await brain.close();
  }
  assert.deepEqual(await runningSandboxes(), []);
});
