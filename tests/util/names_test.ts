import assert from "node:assert/strict";
import {
  checkName,
  checkSessionId,
  hostSessionId,
  hostSessionKey,
  isName,
  MAX_NAME_LENGTH,
} from "../../src/util/names.ts";
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

Deno.test("a host-scoped session key joins a host id and its own session id with ~, unambiguously and never a path", () => {
  assert.equal(hostSessionKey("alpha", "x"), "alpha~x");
  assert.notEqual(hostSessionKey("a.b", "c"), hostSessionKey("a", "b.c"));
  assert.equal(hostSessionId("alpha", hostSessionKey("alpha", "x")), "x");
  assert.equal(hostSessionId("alpha", hostSessionKey("alphabet", "x")), "alphabet~x", "another host's key stays whole");
  assert.equal(checkSessionId("alpha~x"), "alpha~x");
  assert.equal(checkSessionId("plain"), "plain");
  for (const bad of ["~x", "a~", "a~~x", "a~b~c", "..~x", "a~..", "a/b~c", "~", ".", "", 7]) {
    assert.throws(
      () => checkSessionId(bad),
      hasCode("invalid_argument"),
    );
  }
  for (const [host, session] of [["a~b", "c"], ["a", "b~c"], ["..", "x"], ["a", ".."]]) {
    assert.throws(() => hostSessionKey(host, session), hasCode("invalid_argument"));
  }
});
