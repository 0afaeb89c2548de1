import assert from "node:assert/strict";
import { brainEnv, BrainError } from "../../mod.ts";
import { checkGrant, grantPermissions, netAllowed } from "../../src/env/grants.ts";

const denied = (code: string, denied: string) => (error: unknown) =>
  error instanceof BrainError && error.code === code && (error.details as { denied: string }).denied === denied;

Deno.test("checkGrant admits a grant inside the allow-list", () => {
  const env = brainEnv({ name: "r", filesystem: { workspace: "write" }, net: ["api.test:443"], env: ["TOKEN"] });
  checkGrant(env, { workspaceRoot: ".tmp", filesystem: ["read", "write"], net: ["api.test:443"], env: ["TOKEN"] });
});

Deno.test("checkGrant denies each part outside the allow-list, naming it", () => {
  const allow = { workspaceRoot: ".tmp", filesystem: ["read" as const], net: ["api.test"], env: ["HOME"] };
  assert.throws(
    () => checkGrant(brainEnv({ name: "w", filesystem: { workspace: "write" } }), allow),
    denied("permission_denied", 'filesystem workspace "write"'),
  );
  assert.throws(
    () => checkGrant(brainEnv({ name: "n", net: ["other.test"] }), allow),
    denied("permission_denied", 'net "other.test"'),
  );
  assert.throws(
    () => checkGrant(brainEnv({ name: "e", env: ["TOKEN"] }), allow),
    denied("permission_denied", 'env "TOKEN"'),
  );
});

Deno.test("checkGrant denies a workspace when the allow-list has no workspaceRoot, and everything by default", () => {
  assert.throws(
    () => checkGrant(brainEnv({ name: "r", filesystem: { workspace: "read" } }), { filesystem: ["read"] }),
    denied("permission_denied", 'filesystem workspace "read"'),
  );
  assert.throws(
    () => checkGrant(brainEnv({ name: "n", net: ["a.test"] })),
    denied("permission_denied", 'net "a.test"'),
  );
  checkGrant(brainEnv({ name: "none" }));
});

Deno.test("netAllowed: a bare host allows its ports; host:port allows only that port", () => {
  assert.equal(netAllowed("127.0.0.1:8080", ["127.0.0.1"]), true);
  assert.equal(netAllowed("127.0.0.1", ["127.0.0.1"]), true);
  assert.equal(netAllowed("127.0.0.1:8080", ["127.0.0.1:9090"]), false);
  assert.equal(netAllowed("127.0.0.1", ["127.0.0.1:8080"]), false);
  assert.equal(netAllowed("127.0.0.10:80", ["127.0.0.1"]), false);
  assert.equal(netAllowed("a.test", undefined), false);
});

Deno.test("grantPermissions is exactly the grant, with the workspace as the only path", () => {
  assert.deepEqual(grantPermissions({ filesystem: { workspace: "read" }, net: ["a.test"] }, "/ws"), {
    read: ["/ws"],
    write: false,
    net: ["a.test"],
    env: false,
    run: false,
    ffi: false,
    sys: false,
    import: false,
  });
  const write = grantPermissions({ filesystem: { workspace: "write" }, env: ["X"] }, "/ws");
  assert.deepEqual([write.read, write.write, write.net, write.env], [["/ws"], ["/ws"], false, ["X"]]);
  assert.equal(grantPermissions({ filesystem: { workspace: "read" } }, undefined).read, false);
});
