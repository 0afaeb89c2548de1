/**
 * The link between a host client and its Brain server fails at the worst
 * frame: the reply that carries a call's dispatch, or the push that answers a
 * Tool's finish, is dropped with the link cut, or the link falls silent without
 * closing after none or half of that frame. Every call is run at most once, its
 * caller settles, and the client serves the next call.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { hasCode } from "../_support/has_code.ts";
import { withDeadline } from "../_support/deadline.ts";
import { until } from "../_support/until.ts";
import { faultProxy } from "./fault_proxy.ts";

/** A Brain server, a fault proxy before it, and a client through the proxy hosting `counted`; disposed in reverse. */
async function linked() {
  const stack = new AsyncDisposableStack();
  const server = stack.use(await servedBrain({ serverToken: "operator", pingIntervalMs: 300 }));
  const proxy = faultProxy(server.url);
  stack.defer(() => proxy.close());
  const runs: number[] = [];
  const finishes: unknown[] = [];
  const counted = tool({
    name: "counted",
    description: "Finishes with how many times it ran, and keeps what its finish said.",
    input: z.object({}),
    run: async (_input, ctx) => {
      runs.push(ctx.sequence);
      await ctx.finish(runs.length).then((finished) => finishes.push(finished), (error) => finishes.push(error));
    },
  });
  const brain = new Brain({ url: proxy.url, serverToken: "operator", token: "t", host: "h", pingIntervalMs: 300 });
  stack.defer(() => brain.close());
  const session = await brain.sessions.create({ tools: [counted()] });
  return { proxy, session, runs, finishes, [Symbol.asyncDispose]: () => stack.disposeAsync() };
}

for (const how of ["cut", "stall", "half"] as const) {
  Deno.test(`a start reply carrying its dispatch lost (${how}): the call ends unknown, never runs, and the next one does`, async () => {
    await using link = await linked();
    const sprung = link.proxy.trap('"run":true', how);
    const call = link.session.call("counted", {}, { deadline: Date.now() + 5_000 });
    await sprung;
    await assert.rejects(withDeadline(call, "the caller to settle"), hasCode("connection_lost"));
    const records = await until(link.session, (seen) => seen.some((record) => record.kind === "tool_call_finished"));
    const [started, finished] = records;
    assert.equal(started.kind, "tool_call_started");
    assert.deepEqual(finished.kind === "tool_call_finished" && [finished.call, finished.cause], [1, "unknown"]);
    const next = await link.session.call("counted", {}, { deadline: Date.now() + 5_000 });
    assert.deepEqual(next.outcome, { status: "ok", value: 1 });
    assert.deepEqual(link.runs, [next.call], "only the next call ran");
  });

  Deno.test(`the push answering a Tool's finish lost (${how}): its finish fails connection_lost, its caller gets the committed end once`, async () => {
    await using link = await linked();
    const sprung = link.proxy.trap('"t":"ended"', how);
    const end = await withDeadline(link.session.call("counted", {}, { deadline: Date.now() + 5_000 }), "the caller");
    await sprung;
    assert.deepEqual([end.cause, end.outcome], ["finish", { status: "ok", value: 1 }]);
    assert.equal(link.finishes.length, 1);
    assert.ok(hasCode("connection_lost")(link.finishes[0]), `the Tool's finish said ${link.finishes[0]}`);
    const next = await link.session.call("counted", {}, { deadline: Date.now() + 5_000 });
    assert.deepEqual(next.outcome, { status: "ok", value: 2 });
    const terminals = (await link.session.read()).filter((record) => record.kind === "tool_call_finished");
    assert.deepEqual(terminals.map((record) => "call" in record && record.call), [end.call, next.call]);
  });
}
