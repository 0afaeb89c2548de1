import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type BrainErrorCode, hostEnv, tool, type ToolContext } from "../../mod.ts";
import { BrainError } from "../../mod.ts";
import { trap } from "../_support/trap.ts";

type Control = ToolContext<never, never>["environments"];

/** Hostile arguments to `ctx.environments`, each with the code it must be refused with. */
const CASES: [string, (control: Control) => Promise<unknown>, BrainErrorCode][] = [
  ["get(Proxy)", (control) => control.get(trap() as never), "invalid_argument"],
  ["create(Proxy)", (control) => control.create(trap() as never), "invalid_argument"],
  ["create({})", (control) => control.create({} as never), "invalid_argument"],
  [
    "create with an unknown field",
    (control) => control.create({ kind: "brain", name: "n", grant: {} } as never),
    "invalid_argument",
  ],
  ["create with a name ..", (control) => control.create({ kind: "brain", name: ".." }), "invalid_argument"],
  [
    "create with credentials in baseUrl",
    (control) => control.create({ kind: "http", name: "h", baseUrl: "http://u:p@127.0.0.1:1" }),
    "invalid_argument",
  ],
  ["update(Proxy, Proxy)", (control) => control.update(trap() as never, trap() as never), "invalid_argument"],
  ["setup(Proxy)", (control) => control.setup(trap() as never), "invalid_argument"],
  ["delete(Proxy)", (control) => control.delete(trap() as never), "invalid_argument"],
  [
    "call(Proxy, Proxy, Proxy)",
    (control) => control.call(trap() as never, trap() as never, trap() as never),
    "invalid_argument",
  ],
  ["call(app, Proxy descriptor)", (control) => control.call("app", trap() as never, {}), "unsupported_runtime"],
];

Deno.test("hostile ctx.environments: Proxies, unknown spec fields and unreadable names are refused with codes", async () => {
  const refusals: string[] = [];
  const control = tool({
    name: "control",
    description: "Uses ctx.environments badly.",
    input: z.object({}),
    run: async (_input, ctx) => {
      for (const [what, attempt, expected] of CASES) {
        const code = await attempt(ctx.environments).then(
          () => "accepted",
          (error) => error instanceof BrainError ? error.code : `a bare ${error}`,
        );
        if (code !== expected) refusals.push(`${what}: ${code}, not ${expected}`);
      }
      return ctx.finish(null);
    },
  });
  await using brain = new Brain({ allow: {} });
  const env = hostEnv({ name: "app", control: ["get", "create", "update", "setup", "delete", "call"] });
  const session = await brain.sessions.create({ tools: [control({ env })] });
  assert.deepEqual((await session.call("control", {})).outcome, { status: "ok", value: null });
  assert.deepEqual(refusals, []);
});
