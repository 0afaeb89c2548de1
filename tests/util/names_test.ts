import assert from "node:assert/strict";
import {} from "../../src/outcome/errors.ts";
import { checkName, isName, MAX_NAME_LENGTH } from "../../src/util/names.ts";
import { sameText } from "../../src/util/same_text.ts";
import { hasCode } from "../_support/has_code.ts";

Deno.test("a name is letters, digits, -, _ and ., never a dot first, at most MAX_NAME_LENGTH", () => {
  for (const good of ["a", "s1", "my-env", "my_env", "v1.2", "-x", "_x", "a..b", "x".repeat(MAX_NAME_LENGTH)]) {
    assert.ok(isName(good), good);
  }
  for (
    const bad of [
      "",
      ".",
      "..",
      ".hidden",
      "a/b",
      "../x",
      "a\\b",
      "a\0b",
      "a\nb",
      "a b",
      "é",
      "%2e%2e",
      "x".repeat(MAX_NAME_LENGTH + 1),
      42,
      undefined,
      null,
    ]
  ) {
    assert.ok(!isName(bad), JSON.stringify(bad));
    assert.throws(
      () => checkName("an id", bad),
      hasCode("invalid_argument"),
    );
  }
});

Deno.test("sameText is equality, lengths included", () => {
  assert.ok(sameText("", ""));
  assert.ok(sameText("token", "token"));
  assert.ok(!sameText("token", "tokem"));
  assert.ok(!sameText("token", "token2"));
  assert.ok(!sameText("", "a"));
  assert.ok(!sameText("a\0", "a"));
});
