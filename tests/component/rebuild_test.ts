import assert from "node:assert/strict";
import { buildComponent, COMPONENTS } from "../../examples/build_components.ts";
import { inspectTool, probeTool, reader, readerBrain } from "../_support/components.ts";
import { soon } from "../_support/deadline.ts";
import { component } from "../../mod.ts";

Deno.test("rebuilding the Components from source gives the committed bytes", async () => {
  for (const source of COMPONENTS) {
    assert.deepEqual(await buildComponent(source), await Deno.readFile(source.out), source.out.pathname);
  }
});

Deno.test("rebuilt Components still pass: inspect lists and refuses, probe emits and finishes", async () => {
  await Deno.mkdir(".tmp/rebuilt", { recursive: true });
  const [inspect, probe] = await Promise.all(COMPONENTS.map(async (source) => {
    const out = new URL(`../../.tmp/rebuilt/${source.worldName}.wasm`, import.meta.url);
    await Deno.writeFile(out, await buildComponent(source));
    return out;
  }));
  await using brain = readerBrain();
  const session = await brain.sessions.create({
    tools: [
      inspectTool(inspect)({ env: reader, depth: 2 }),
      probeTool("emit_then_echo", component(probe))({ env: reader }),
    ],
  });
  await Deno.mkdir(`${session.workspace("reader")}/d`);
  const listed = await session.call("inspect", { path: "." }, { deadline: soon() });
  assert.deepEqual(listed.outcome.status === "ok" && listed.outcome.value, { eventSequence: 2, entries: ["d/"] });
  const refused = await session.call("inspect", { path: ".." }, { deadline: soon() });
  assert.equal(refused.outcome.status === "error" && refused.outcome.error.code, "fs_error");
  const echoed = await session.call("emit_then_echo", { status: "ok", value: 9 }, { deadline: soon() });
  assert.deepEqual(echoed.outcome, { status: "ok", value: 9 });
});
