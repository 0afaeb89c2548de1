import assert from "node:assert/strict";
import { StringTable } from "../../src/journal/string_table.ts";

Deno.test("a string table shares short strings up to its bound, and no long ones", () => {
  const strings = new StringTable();
  assert.equal(strings.numberOf("ok"), strings.numberOf("ok"));
  assert.equal(strings.numberOf("x".repeat(33)), -1);
  for (let index = 0; index < 5000; index++) strings.numberOf(`s${index}`);
  assert.equal(strings.numberOf("s4999"), -1);
  assert.equal(strings.at(strings.numberOf("ok")), "ok");
});
