import assert from "node:assert/strict";
import { z } from "zod";
import { hostEnv, httpEnv, tool } from "../../mod.ts";
import { embeddedSession } from "../_support/embedded_session.ts";
import { hasCode } from "../_support/has_code.ts";
import { trap } from "../_support/trap.ts";
import { errorFromWire } from "../../src/outcome/wire_error.ts";
import { extensionEnv, toolExtension } from "../../src/extension/mod.ts";
import { mcpEnv, serveMcp } from "../../src/mcp/mod.ts";
import { serveBrain } from "../../src/host/server/server.ts";

const nested = (levels: number) => {
  let value: unknown = "bottom";
  for (let level = 0; level < levels; level++) value = { next: value };
  return value;
};
const depthOf = (value: unknown) => {
  let depth = 0;
  for (let at = value as { next?: unknown }; typeof at === "object" && at !== null; at = at.next as never) depth++;
  return depth;
};

Deno.test("hostile factory options: 100 000 levels, a __proto__ key and unreadable values are frozen copies or invalid_options", async () => {
  const configured = tool({
    name: "configured",
    description: "Reports how deep its options nest.",
    input: z.object({}),
    options: z.object({ tree: z.unknown() }),
    run: (_input, ctx) => ctx.finish({ depth: depthOf(ctx.options.tree), frozen: Object.isFrozen(ctx.options.tree) }),
  });
  await using session = await embeddedSession([configured({ tree: nested(100_000) })]);
  assert.deepEqual((await session.call("configured", {})).outcome, {
    status: "ok",
    value: { depth: 100_000, frozen: true },
  });
  const polluting = configured({ tree: JSON.parse('{"__proto__": {"polluted": true}}') });
  const tree = polluting.options.tree as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(tree), Object.prototype, "a __proto__ key stays a key");
  assert.deepEqual(Object.keys(tree), ["__proto__"]);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.throws(() => configured({ tree: { inner: trap() } }), hasCode("invalid_options"));
});

Deno.test("hostile wire errors: a code outside the closed list arrives as protocol_error naming it", () => {
  const error = errorFromWire({ code: "made_up", message: "m", details: { a: 1 } });
  assert.equal(error.code, "protocol_error");
  assert.match(error.message, /made_up/);
  assert.deepEqual(error.details, { a: 1 });
  assert.equal(errorFromWire({ code: "timeout", message: "m" }).code, "timeout");
});

Deno.test("hostile factory options: a misspelled option is invalid_argument in every factory, never silently ignored", async () => {
  const echo = tool({ name: "echo", description: "d", input: z.object({}), run: (_input, ctx) => ctx.finish(null) });
  await using session = await embeddedSession([echo()]);
  const factories: [string, () => unknown][] = [
    ["hostEnv", () => hostEnv({ name: "a", contrl: ["get"] } as never)],
    ["httpEnv", () => httpEnv({ name: "a", baseUrl: "http://127.0.0.1:1", timeoutMs: 5 } as never)],
    ["extensionEnv", () => extensionEnv({ name: "a", url: "http://127.0.0.1:1", maxReportByte: 5 } as never)],
    ["toolExtension", () => toolExtension({ tools: [], maxRequestByte: 5 } as never)],
    ["mcpEnv", () => mcpEnv({ name: "a", url: "http://127.0.0.1:1", timeout: 5 } as never)],
    ["serveMcp", () => serveMcp(session, { deadline: 5 } as never)],
  ];
  for (const [what, make] of factories) assert.throws(make, hasCode("invalid_argument", /unknown/), what);
});

Deno.test("hostile durations: a wait no timer can hold is invalid_argument where it is given, never a timer firing at once", async () => {
  const echo = tool({ name: "echo", description: "d", input: z.object({}), run: (_input, ctx) => ctx.finish(null) });
  await using session = await embeddedSession([echo()]);
  for (const ms of [2 ** 31, 1e300, Infinity]) {
    await assert.rejects(
      serveBrain({ serverToken: "operator-secret", pingIntervalMs: ms }),
      hasCode("invalid_argument"),
      `pingIntervalMs ${ms}`,
    );
    assert.throws(
      () => mcpEnv({ name: "a", url: "http://127.0.0.1:1", timeoutMs: ms }),
      hasCode("invalid_argument"),
      `mcpEnv timeoutMs ${ms}`,
    );
  }
  assert.throws(() => serveMcp(session, { deadlineMs: 1e300 }), hasCode("invalid_argument"), "serveMcp deadlineMs");
});

Deno.test("hostile factory options: an async refinement or transform is invalid_options, and a rejection of it is handled", async () => {
  const unhandled: unknown[] = [];
  const listener = (event: PromiseRejectionEvent) => {
    unhandled.push(event.reason);
    event.preventDefault();
  };
  globalThis.addEventListener("unhandledrejection", listener);
  try {
    const schemas = [
      z.object({}).refine(() => Promise.reject(new Error("refine rejected"))),
      z.object({ a: z.string().refine(() => Promise.reject(new Error("nested refine rejected"))) }),
      z.object({}).transform(() => Promise.reject(new Error("transform rejected"))),
      z.object({}).refine(() => Promise.resolve(true)),
    ];
    for (const options of schemas) {
      const placed = tool({ name: "t", description: "d", input: z.object({}), options, run: () => {} });
      assert.throws(() => placed({ a: "x" } as never), hasCode("invalid_options", /asynchronous/));
    }
    // An unhandled rejection is reported once the microtasks ran out: by the next task, it was or it was not.
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.deepEqual(unhandled.map(String), []);
  } finally {
    globalThis.removeEventListener("unhandledrejection", listener);
  }
});
