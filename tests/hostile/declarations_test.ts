import assert from "node:assert/strict";
import { z } from "zod";
import { MAX_JSON_DEPTH, tool } from "../../mod.ts";
import { hasCode } from "../_support/has_code.ts";

/** An object schema nesting `levels` objects, each a JSON Schema `properties` level deeper. */
const nested = (levels: number) => {
  let schema: z.ZodType = z.string();
  for (let level = 0; level < levels; level++) schema = z.object({ a: schema });
  return schema as z.ZodObject;
};

Deno.test("hostile declarations: a schema whose JSON Schema nests past MAX_JSON_DEPTH fails at tool(), before any transport", () => {
  const declare = (input: z.ZodObject, output?: z.ZodType) =>
    tool({ name: "deep", description: "d", input, ...(output ? { output } : {}), run: (_input, ctx) => ctx.finish() });
  // Each object level is two JSON levels: the schema and its properties.
  assert.doesNotThrow(() => declare(nested(MAX_JSON_DEPTH / 2 - 2)));
  for (const levels of [MAX_JSON_DEPTH / 2 + 2, 5_000]) {
    assert.throws(() => declare(nested(levels)), hasCode("invalid_schema"), `input of ${levels} levels`);
    assert.throws(() => declare(z.object({}), nested(levels)), hasCode("invalid_schema"), `output of ${levels} levels`);
  }
});
