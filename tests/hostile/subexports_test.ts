import assert from "node:assert/strict";
import { BrainError } from "../../mod.ts";
import * as journal from "../../src/journal/mod.ts";
import * as server from "../../src/host/server/mod.ts";
import * as environment from "../../src/env/mod.ts";
import * as extension from "../../src/extension/mod.ts";
import * as testing from "../../src/model/testing.ts";
import * as tools from "../../src/manifest/mod.ts";
import * as mcp from "../../src/mcp/mod.ts";
import { runCli } from "../../src/manifest/cli.ts";
import { trap } from "../_support/trap.ts";

/** A Proxy of `target` that was revoked: every operation on it throws a TypeError. */
function revoked(target: object): unknown {
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  return proxy;
}

/** Values a careless or hostile caller passes where an options object belongs: Proxies and getters that throw too. */
const BAD: unknown[] = [
  undefined,
  null,
  0,
  "",
  [],
  () => {},
  Symbol("bad"),
  { name: null },
  { name: "x".repeat(100_000) },
  trap(),
  {
    get name() {
      throw new RangeError("getter");
    },
  },
  revoked({}),
  revoked(() => {}),
];

const show = (value: unknown) => {
  try {
    return typeof value === "symbol"
      ? "symbol"
      : typeof value === "function"
      ? "function"
      : JSON.stringify(value)?.slice(0, 30);
  } catch {
    return "a Proxy";
  }
};

/** Closes whatever a call that should have failed made anyway. */
async function dispose(made: unknown): Promise<void> {
  const value = made as { close?: () => unknown; shutdown?: () => unknown } | undefined;
  await value?.shutdown?.();
  await value?.close?.();
}

Deno.test("hostile sub-exports: every function and class answers bad options with a BrainError, never a bare error", async () => {
  const modules = { journal, server, environment, extension, testing, tools, mcp };
  const failures: string[] = [];
  for (const [where, module] of Object.entries(modules)) {
    for (const [name, value] of Object.entries(module)) {
      if (typeof value !== "function") continue;
      const isClass = /^class\b/.test(Function.prototype.toString.call(value));
      // deno-lint-ignore no-explicit-any
      const open = (value as any).open as ((arg: unknown) => unknown) | undefined;
      for (const arg of BAD) {
        const attempts: [string, () => unknown][] = [
          // deno-lint-ignore no-explicit-any
          [name, () => isClass ? new (value as any)(arg) : (value as any)(arg)],
          ...(isClass && typeof open === "function"
            ? [[`${name}.open`, () => open.call(value, arg)] as [string, () => unknown]]
            : []),
        ];
        for (const [what, attempt] of attempts) {
          try {
            await dispose(await attempt());
          } catch (error) {
            if (!(error instanceof BrainError)) failures.push(`${where}.${what}(${show(arg)}): ${error}`);
          }
        }
      }
    }
  }
  assert.deepEqual(failures, []);
});

Deno.test("hostile sub-exports: predicates answer false for Proxies, and the CLI refuses arguments that are not strings", async () => {
  assert.equal(environment.isBrainEnv(BAD[9] as never), false);
  assert.equal(environment.factoryImplementation(BAD[9]), undefined);
  const { error } = console;
  console.error = () => {};
  try {
    for (const args of [null, [5], ["check", 5], "check x"]) assert.equal(await runCli(args as never), 2, show(args));
  } finally {
    console.error = error;
  }
});

Deno.test("hostile sub-exports: the grant helpers refuse malformed grants and allow-lists invalid_argument; netAllowed answers false", () => {
  const env = (grant: unknown) => ({ name: "e", grant: grant as never });
  const malformed: [string, () => unknown][] = [
    ["an allow-list that is null", () => environment.checkGrant(env({ net: ["a"] }), null as never)],
    ["an allow-list that is a Proxy", () => environment.checkGrant(env({ net: ["a"] }), trap() as never)],
    ["allow.net a number", () => environment.checkGrant(env({ net: ["a"] }), { net: 5 as never })],
    ["grant.net a number", () => environment.checkGrant(env({ net: 5 }), { net: ["a"] })],
    ["grant.net a Proxy", () => environment.checkGrant(env({ net: trap() }), { net: ["a"] })],
    ["grant.env of numbers", () => environment.checkGrant(env({ env: [5] }), {})],
    ["grant.filesystem a Proxy", () => environment.checkGrant(env({ filesystem: trap() }), {})],
    ["grantPermissions of a Proxy net", () => environment.grantPermissions({ net: trap() as never }, undefined)],
    ["grantPermissions of a workspace 5", () => environment.grantPermissions({}, 5 as never)],
  ];
  for (const [what, attempt] of malformed) {
    assert.throws(attempt, (error) => error instanceof BrainError && error.code === "invalid_argument", what);
  }
  assert.throws(
    () => environment.checkGrant(env({ net: ["b"] }), { net: ["a"] }),
    (error) => error instanceof BrainError && error.code === "permission_denied",
  );
  const list = new Proxy(["a"], {
    get: () => {
      throw new Error("get trap");
    },
  });
  for (const [host, allowed] of [[5, ["a"]], [trap(), ["a"]], ["a", 5], ["a", trap()], ["a", list], ["a", {}]]) {
    assert.equal(environment.netAllowed(host as never, allowed as never), false, show([host, allowed]));
  }
  assert.equal(environment.netAllowed("a:80", ["a"]), true);
});

Deno.test("hostile sub-exports: a ScriptedProvider refuses unreadable options and steps", () => {
  const { proxy, revoke } = Proxy.revocable([], {});
  revoke();
  for (const [steps, options] of [[[], trap()], [[], { name: 5 }], [[], { nam: "x" }], [proxy, {}]]) {
    assert.throws(
      () => new testing.ScriptedProvider(steps as never, options as never),
      (error) => error instanceof BrainError && error.code === "invalid_argument",
      show([steps, options]),
    );
  }
});
