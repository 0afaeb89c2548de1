import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type CallEnd, tool } from "../../mod.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { trap } from "../_support/trap.ts";

const OPERATOR = "operator-secret";
const code = ({ outcome }: CallEnd) => outcome.status === "error" ? outcome.error.code : outcome.status;

/**
 * What a Tool's run returns, and the code its call ends with: unreadable values are invalid_output. (A readable
 * value is a result that leaves the call open until it finishes, so none is here.)
 */
const returns: [string, () => unknown, string][] = [
  ["a Proxy whose every trap throws", () => trap(), "invalid_output"],
  ["a Proxy whose get trap throws only for then", () =>
    new Proxy({ a: 1 }, {
      get(target, key) {
        if (key === "then") throw new Error("then trap");
        return Reflect.get(target, key);
      },
    }), "invalid_output"],
  ["an object whose then getter throws", () => ({
    get then() {
      throw new Error("then getter");
    },
  }), "invalid_output"],
  ["an object with a throwing getter", () => ({
    get value() {
      throw new Error("value getter");
    },
  }), "invalid_output"],
  ["a Proxy whose getPrototypeOf throws", () =>
    new Proxy({ a: 1 }, {
      getPrototypeOf() {
        throw new Error("getPrototypeOf trap");
      },
    }), "invalid_output"],
  ["a revoked Proxy", () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  }, "invalid_output"],
  ["a cyclic object", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    return cycle;
  }, "invalid_output"],
  ["a 100 000 deep array", () => JSON.parse("[".repeat(100_000) + "]".repeat(100_000)), "invalid_output"],
  ["NaN", () => NaN, "invalid_output"],
  ["a thenable whose then method throws (a rejection)", () => ({
    then() {
      throw new Error("then method");
    },
  }), "tool_error"],
  [
    // Resolving a promise with a Proxy reads its then inside the promise, which rejects: as an async run returning one.
    "a thenable resolving a Proxy",
    () => ({ then: (resolve: (value: unknown) => void) => resolve(trap()) }),
    "tool_error",
  ],
];

const tools = returns.map(([, make], index) =>
  tool({
    name: `returns_${index}`,
    description: "Returns something hostile.",
    input: z.object({}),
    run: () => make() as never,
  })
);

async function endsOf(brain: Brain): Promise<string[]> {
  const session = await brain.sessions.create({ tools: tools.map((placed) => placed()) });
  const codes: string[] = [];
  for (const [index] of returns.entries()) {
    codes.push(code(await session.call(`returns_${index}`, {})));
  }
  const records = await session.read();
  const started = records.filter((record) => record.kind === "tool_call_started").length;
  const finished = records.filter((record) => record.kind === "tool_call_finished").length;
  assert.equal(finished, started, "every call ended once");
  await session.end();
  return codes;
}

Deno.test("hostile returned values: unreadable values end invalid_output, a rejecting thenable tool_error, the same embedded and remote", async () => {
  const expected = returns.map(([what, , code]) => `${what}: ${code}`);
  await using embedded = new Brain();
  const local = await endsOf(embedded);
  assert.deepEqual(returns.map(([what], index) => `${what}: ${local[index]}`), expected, "embedded");
  await using server = await servedBrain({ serverToken: OPERATOR, pingIntervalMs: 60_000 });
  await using client = new Brain({ url: server.url, token: "returns-token", serverToken: OPERATOR, host: "app" });
  const remote = await endsOf(client);
  assert.deepEqual(returns.map(([what], index) => `${what}: ${remote[index]}`), expected, "remote");
});
