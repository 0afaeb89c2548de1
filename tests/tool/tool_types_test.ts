import assert from "node:assert/strict";
import { z } from "zod";
import { type CallEnd, fail, type JsonValue, type Outcome, tool } from "../../mod.ts";
import { embeddedSession } from "../_support/embedded_session.ts";

/**
 * The types a user of the README's lookup Tool relies on. These assertions are checked by `deno check` (the test
 * task type-checks tests/): a regression in the inferred types fails the check, not only the run.
 */

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
type Expect<T extends true> = T;

const lookup = tool({
  name: "lookup",
  description: "Look up one customer record by id.",
  input: z.object({ id: z.string(), limit: z.number().default(10) }),
  output: z.object({ value: z.string(), count: z.string().transform(Number).pipe(z.number()) }).nullable(),
  options: z.object({ prefix: z.string(), shout: z.boolean().optional() }),
  run: (input, ctx) => {
    // run sees the parsed input (defaults applied) and the parsed options.
    const _input: Expect<Equal<typeof input, { id: string; limit: number }>> = true;
    const _options: Expect<Equal<typeof ctx.options, Readonly<{ prefix: string; shout?: boolean | undefined }>>> = true;
    // finish takes what the output schema accepts (its input), an outcome, or nothing.
    const _finish: Expect<
      Equal<
        Parameters<typeof ctx.finish>[0],
        { value: string; count: string } | null | Outcome | undefined
      >
    > = true;
    if (input.id === "missing") return ctx.finish(fail("not_found", `no customer ${input.id}`));
    // @ts-expect-error count is given as the schema's input, a string
    if (input.id === "wrong") return ctx.finish({ value: "x", count: 1 });
    return ctx.finish({ value: `${ctx.options.prefix}${input.id}`, count: String(input.limit) });
  },
});

const plain = tool({
  name: "plain",
  description: "No options, no output schema.",
  input: z.object({ text: z.string() }),
  run: (input, ctx) => {
    const _options: Expect<Equal<typeof ctx.options, Readonly<Record<string, never>>>> = true;
    const _finish: Expect<Equal<Parameters<typeof ctx.finish>[0], JsonValue | Outcome | undefined>> = true;
    return ctx.finish(input.text);
  },
});

// The placement takes the options schema's input and an optional env; a wrong option type does not compile.
type LookupPlacement = Parameters<typeof lookup>[0];
const _placement: Expect<Equal<NonNullable<LookupPlacement>["prefix"], string>> = true;
// @ts-expect-error prefix is a string
const _wrongOption = () => lookup({ prefix: 3 });

Deno.test("the inferred types of tool() match what its run function and session.call give at runtime", async () => {
  await using session = await embeddedSession([lookup({ prefix: "customer:" }), plain()]);
  const end = await session.call("lookup", { id: "7" });
  const _end: Expect<Equal<typeof end, CallEnd>> = true;
  const _outcome: Expect<Equal<typeof end.outcome, Outcome<JsonValue>>> = true;
  assert.equal(end.outcome.status, "ok");
  if (end.outcome.status === "ok") {
    const _value: Expect<Equal<typeof end.outcome.value, JsonValue>> = true;
    assert.deepEqual(end.outcome.value, { value: "customer:7", count: 10 });
  }
  const missing = await session.call("lookup", { id: "missing" });
  assert.equal(missing.outcome.status === "error" && missing.outcome.error.code, "not_found");
  const started = await session.start("plain", { text: "hi" });
  const _ended: Expect<Equal<typeof started.ended, Promise<CallEnd>>> = true;
  assert.deepEqual((await started.ended).outcome, { status: "ok", value: "hi" });
});
