import assert from "node:assert/strict";
import { z } from "zod";
import { tool } from "../../mod.ts";
import { embeddedSession } from "../_support/embedded_session.ts";
import { hasCode } from "../_support/has_code.ts";
import { trap } from "../_support/trap.ts";

Deno.test("hostile call targets: a Proxy or a getter that throws as the Tool to call is unknown_tool, nothing committed", async () => {
  const echo = tool({ name: "echo", description: "d", input: z.object({}), run: (_input, ctx) => ctx.finish(null) });
  await using session = await embeddedSession([echo()]);
  const targets: [string, unknown][] = [
    ["a Proxy", trap()],
    ["a placement whose tool getter throws", {
      get tool() {
        throw new Error("tool getter");
      },
    }],
    ["a placement whose tool is a Proxy", { tool: trap() }],
  ];
  for (const [what, target] of targets) {
    await assert.rejects(session.start(target as never, {}), hasCode("unknown_tool"), what);
    await assert.rejects(session.call(target as never, {}), hasCode("unknown_tool"), what);
  }
  assert.deepEqual(await session.read(), [], "no intent was committed");
});
