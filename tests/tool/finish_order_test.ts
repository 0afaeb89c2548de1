import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type Finished, tool } from "../../mod.ts";
import { gate } from "../_support/gate.ts";

/** An output check that lets a checked "returned" overtake a checked "finished", if Brain started both. */
function overtakingCheck() {
  const returnedChecked = gate();
  return z.string().refine(async (value) => {
    if (value === "returned") returnedChecked.open();
    else {
      let timer: ReturnType<typeof setTimeout> | undefined;
      // Bounded: Brain checks what run returned only once the finish committed, so the gate may never open first.
      await Promise.race([returnedChecked.wait, new Promise((resolve) => timer = setTimeout(resolve, 50))]);
      clearTimeout(timer);
    }
    return true;
  });
}

for (
  const [schema, output] of [
    ["a synchronous", () => z.string()],
    ["an asynchronous", overtakingCheck],
  ] as const
) {
  Deno.test(`a ctx.finish the Tool does not await, through ${schema} output schema, commits before what run returns`, async () => {
    await using brain = new Brain();
    let finished: Promise<Finished> | undefined;
    const quick = tool({
      name: "quick",
      description: "Finishes, then returns without awaiting the finish.",
      input: z.object({}),
      output: output(),
      run: (_input, ctx) => {
        finished = ctx.finish("finished");
        return "returned";
      },
    });
    const session = await brain.sessions.create({ tools: [quick()] });
    const end = await session.call("quick", {});
    assert.deepEqual(end.outcome, { status: "ok", value: "finished" });
    const own = await finished!;
    assert.deepEqual([own.sequence, own.late], [end.sequence, false]);
    // What run returned comes after the end: a late record, or nothing once an asynchronous check sees the end.
    const records = (await session.read()).filter((record) => record.sequence >= end.call);
    assert.deepEqual(records.slice(0, 3).map((record) => record.kind), [
      "tool_call_started",
      "tool_result",
      "tool_call_finished",
    ]);
    assert.deepEqual(records[1].kind === "tool_result" && records[1].outcome, { status: "ok", value: "finished" });
  });
}
