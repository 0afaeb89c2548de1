import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, BrainError, tool } from "../../mod.ts";
import type { Dispatch, Environment } from "../../src/env/mod.ts";
import { withDeadline } from "../_support/deadline.ts";

/**
 * Application Environments that misbehave: a `place` that throws what is no Error or answers no tools, a grant
 * or description that cannot be read, an interpreter that ends its call with a result that cannot be read.
 * Each caller gets a BrainError with a code, and every call ends.
 */

function revoked(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

const codeOf = (error: unknown) => error instanceof BrainError ? error.code : `a bare ${describe(error)}`;

function describe(error: unknown): string {
  try {
    return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  } catch {
    return typeof error;
  }
}

const custom = { kind: "custom", describe: () => ({ kind: "custom", name: "e" }) };
const echo = tool({
  name: "echo",
  description: "Echoes.",
  input: z.object({}),
  implementation: () => ({ type: "echo" }),
});
const placing = (place: () => unknown): Environment => ({ name: "e", ...custom, place: place as Environment["place"] });
const interpreting = (interpret: (dispatch: Dispatch) => void): Environment => ({
  name: "e",
  ...custom,
  interpret: (_descriptor, dispatch) => interpret(dispatch),
});

/** What creating a session over each hostile Environment must fail with. */
const CREATIONS: [string, (brain: Brain) => Promise<unknown>, string][] = [
  ["place throws null", (brain) =>
    brain.sessions.create({
      environments: [placing(() => {
        throw null;
      })],
    }), "setup_failed"],
  ["place throws a revoked Proxy", (brain) =>
    brain.sessions.create({
      environments: [placing(() => {
        throw revoked();
      })],
    }), "setup_failed"],
  [
    "place answers a revoked Proxy",
    (brain) => brain.sessions.create({ environments: [placing(revoked)] }),
    "setup_failed",
  ],
  [
    "place resolves null",
    (brain) => brain.sessions.create({ environments: [placing(() => Promise.resolve(null))] }),
    "invalid_tool",
  ],
  [
    "place resolves a close that is no function",
    (brain) => brain.sessions.create({ environments: [placing(() => Promise.resolve({ tools: [], close: "close" }))] }),
    "invalid_tool",
  ],
  ["place resolves no placed tool, and a close that throws null", (brain) =>
    brain.sessions.create({
      environments: [placing(() =>
        Promise.resolve({
          tools: [null],
          close() {
            throw null;
          },
        })
      )],
    }), "invalid_tool"],
  ["a grant whose getter throws null", (brain) => {
    const env = {
      ...interpreting(() => {}),
      get grant(): never {
        throw null;
      },
    };
    return brain.sessions.create({ tools: [echo({ env })] });
  }, "invalid_argument"],
  ["one name bound twice, its description throwing undefined", (brain) => {
    const one = interpreting(() => {});
    const other = {
      ...interpreting(() => {}),
      describe(): never {
        throw undefined;
      },
    };
    const again = tool({
      name: "again",
      description: "Again.",
      input: z.object({}),
      implementation: () => ({ type: "echo" }),
    });
    return brain.sessions.create({ tools: [echo({ env: one }), again({ env: other })] });
  }, "invalid_argument"],
];

Deno.test("hostile Environments: a place, grant or description that throws what is no Error or answers garbage fails the session's creation with a code", async () => {
  const wrong: string[] = [];
  for (const [what, create, expected] of CREATIONS) {
    await using brain = new Brain({ allow: {} });
    const code = await withDeadline(create(brain), what).then(() => "accepted", codeOf);
    if (code !== expected) wrong.push(`${what}: ${code}, not ${expected}`);
  }
  assert.deepEqual(wrong, []);
});

/** Interpreters reporting results that cannot be read: each call still ends, invalid_output. */
const REPORTS: [string, (dispatch: Dispatch) => void][] = [
  ["finishes with a revoked Proxy", (dispatch) => void dispatch.sink.finish(revoked() as never).catch(() => {})],
  ["finishes with a result whose outcome getter throws null", (dispatch) =>
    void dispatch.sink.finish({
      get outcome(): never {
        throw null;
      },
    }).catch(() => {})],
  ["returns with a revoked Proxy", (dispatch) => void dispatch.sink.returned(revoked() as never).catch(() => {})],
];

Deno.test("hostile Environments: an interpreter ending its call with a result that cannot be read ends it invalid_output", async () => {
  const wrong: string[] = [];
  for (const [what, report] of REPORTS) {
    await using brain = new Brain();
    const session = await brain.sessions.create({ tools: [echo({ env: interpreting(report) })] });
    const ended = await withDeadline(session.call("echo", {}), `the call that ${what} to end`).then(
      (end) => end.outcome.status === "error" ? end.outcome.error.code : end.outcome.status,
      codeOf,
    );
    if (ended !== "invalid_output") wrong.push(`${what}: ${ended}`);
  }
  assert.deepEqual(wrong, []);
});
