import assert from "node:assert/strict";
import { z } from "zod";
import * as brain from "../../mod.ts";
import { Brain, BrainError, tool } from "../../mod.ts";

/** Values a careless or hostile caller passes where an options object, a name or a record belongs. */
const BAD: unknown[] = [undefined, null, 0, "", "..", {}, [], () => {}, Symbol("bad"), { name: null }, {
  name: "..",
  baseUrl: 5,
}];
/** Exports that are classes an application never constructs itself. */
const INTERNAL = new Set(["Session"]);

const show = (value: unknown) =>
  typeof value === "symbol" ? "symbol" : typeof value === "function" ? "function" : JSON.stringify(value);

async function untyped(run: () => unknown): Promise<string | undefined> {
  try {
    await run();
  } catch (error) {
    if (!(error instanceof BrainError)) return String(error);
  }
  return undefined;
}

Deno.test("every root function and class answers bad input with a BrainError, never a TypeError", async () => {
  const failures: string[] = [];
  for (const [name, value] of Object.entries(brain)) {
    if (typeof value !== "function" || INTERNAL.has(name)) continue;
    const isClass = /^class\b/.test(Function.prototype.toString.call(value));
    for (const arg of BAD) {
      // deno-lint-ignore no-explicit-any
      const call = () => isClass ? new (value as any)(arg) : (value as any)(arg);
      const failure = await untyped(call);
      if (failure) failures.push(`${name}(${show(arg)}): ${failure}`);
    }
  }
  assert.deepEqual(failures, []);
});

Deno.test("the session API answers bad arguments with a BrainError", async () => {
  const echo = tool({
    name: "echo",
    description: "Echoes.",
    input: z.unknown(),
    run: (input, ctx) => ctx.finish(input as never),
  });
  const embedded = new Brain();
  const failures: string[] = [];
  try {
    const session = await embedded.sessions.create({ tools: [echo()] });
    const more = [...BAD, { tools: null }, { tools: [null] }, { id: 5 }, { deadline: "x" }, { timeoutMs: -1 }];
    for (const arg of more) {
      const attempts: Record<string, () => unknown> = {
        "sessions.create": () => embedded.sessions.create(arg as never),
        "sessions.get": () => embedded.sessions.get(arg as never),
        "sessions.get options": () => embedded.sessions.get(session.id, arg as never),
        "sessions.delete": () => embedded.sessions.delete(arg as never),
        "call tool": () => session.call(arg as never, {}),
        "call input": () => session.call("echo", arg as never),
        "call options": () => session.call("echo", {}, arg as never),
        "read": () => session.read(arg as never),
        "send": () => session.send(arg as never),
      };
      for (const [where, run] of Object.entries(attempts)) {
        if (where === "read" && arg === undefined) continue;
        if (
          where === "call input" && [null, 0, "", "..", {}, [], { name: null }].some((ok) => show(ok) === show(arg))
        ) continue;
        const failure = await untyped(run);
        if (failure) failures.push(`${where}(${show(arg)}): ${failure}`);
      }
    }
  } finally {
    await embedded.close();
  }
  assert.deepEqual(failures, []);
});
