import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, tool } from "../../mod.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { refusedEventKind } from "../../src/run/report_arguments.ts";

const OPERATOR = "operator-secret";
const kinds: [string, unknown][] = [
  ["a lone surrogate", "progress\ud800"],
  ["U+FFFD", "progress\ufffd"],
  ["NUL", "a\0b"],
  ["LF", "a\nb"],
  ["DEL", "a\x7f"],
  ["129 characters", "k".repeat(129)],
  ["empty", ""],
  ["a number", 7],
];

const emitter = tool({
  name: "emitter",
  description: "Emits every hostile kind, then a good one, and finishes with the codes.",
  input: z.object({}),
  run: async (_input, ctx) => {
    const codes: string[] = [];
    for (const [, kind] of kinds) {
      codes.push(
        await ctx.emit(kind as string, null).then(
          () => "accepted",
          (error) => error instanceof BrainError ? error.code : `a bare ${error}`,
        ),
      );
    }
    await ctx.emit("résumé_✓", null);
    return ctx.finish(codes);
  },
});

async function emitted(brain: Brain): Promise<{ codes: unknown; events: string[] }> {
  const session = await brain.sessions.create({ tools: [emitter()] });
  const end = await session.call("emitter", {});
  const events = (await session.read()).flatMap((record) => record.kind === "tool_event" ? [record.event] : []);
  await session.end();
  return { codes: end.outcome.status === "ok" ? end.outcome.value : end.outcome, events };
}

Deno.test("hostile event kinds: control characters, lone surrogates, U+FFFD and overlong kinds are refused, embedded and remote", async () => {
  const expected = { codes: kinds.map(() => "invalid_argument"), events: ["résumé_✓"] };
  await using embedded = new Brain();
  assert.deepEqual(await emitted(embedded), expected, "embedded");
  await using server = await servedBrain({ serverToken: OPERATOR, pingIntervalMs: 60_000 });
  await using client = new Brain({ url: server.url, token: "kinds-token", serverToken: OPERATOR, host: "app" });
  assert.deepEqual(await emitted(client), expected, "remote");
});

Deno.test("hostile event kinds stay refused right after a good kind, and before any", () => {
  for (const [name, kind] of kinds) {
    assert.ok(refusedEventKind(kind) instanceof BrainError, name);
    assert.equal(refusedEventKind("progress"), undefined);
    assert.ok(refusedEventKind(kind) instanceof BrainError, `${name}, after a good kind`);
  }
});
