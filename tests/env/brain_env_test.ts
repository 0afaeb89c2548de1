import assert from "node:assert/strict";
import { brainEnv, hostEnv } from "../../mod.ts";
import { hasCode } from "../_support/has_code.ts";

Deno.test("brainEnv freezes its grant and describes it with its control", () => {
  const grant = { workspace: "read" as const };
  const env = brainEnv({ name: "reader", filesystem: grant, net: ["a.test"], control: ["list"] });
  grant.workspace = "write" as never;
  assert.equal(env.grant.filesystem?.workspace, "read");
  assert.equal(Object.isFrozen(env.grant.net), true);
  assert.deepEqual(env.describe(), {
    kind: "brain",
    name: "reader",
    grant: { filesystem: { workspace: "read" }, net: ["a.test"] },
    control: ["list"],
  });
  assert.equal("control" in (env.grant as object), false);
});

Deno.test("brainEnv refuses bad names, modes, lists and control operations", () => {
  assert.throws(() => brainEnv({ name: "" }), hasCode("invalid_argument"));
  assert.throws(() => brainEnv({ name: "a b" }), hasCode("invalid_argument"));
  assert.throws(() => brainEnv({ name: "x", filesystem: { workspace: "all" as never } }), hasCode("invalid_argument"));
  assert.throws(() => brainEnv({ name: "x", net: [""] }), hasCode("invalid_argument"));
  assert.throws(() => brainEnv({ name: "x", env: "HOME" as never }), hasCode("invalid_argument"));
  assert.throws(() => brainEnv({ name: "x", control: ["launch" as never] }), hasCode("invalid_argument"));
  assert.throws(() => hostEnv({ name: "x", setup: "npm install" as never }), hasCode("invalid_argument"));
});

Deno.test("hostEnv has no grant and describes its control", () => {
  const env = hostEnv({ name: "app", control: ["get", "get", "list"] });
  assert.equal(env.grant, undefined);
  assert.deepEqual(env.describe(), { kind: "host", name: "app", control: ["get", "list"] });
});
