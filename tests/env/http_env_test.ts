import assert from "node:assert/strict";
import { Hono } from "hono";
import { z } from "zod";
import { Brain, httpEnv, type Outcome, tool } from "../../mod.ts";
import { serve } from "../_support/serve.ts";
import { httpJsonRequest } from "../../src/env/http_json.ts";
import { hasCode } from "../_support/has_code.ts";
import { soon } from "../_support/deadline.ts";

interface Seen {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  token: string | undefined;
}

/** A stand-in API that records each request and answers by path. */
function api(seen: Seen[]) {
  const app = new Hono();
  app.all("*", async (c) => {
    const text = await c.req.text();
    seen.push({
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      query: { ...c.req.query() },
      body: text ? JSON.parse(text) : undefined,
      token: c.req.header("authorization"),
    });
    if (c.req.path.endsWith("/unavailable")) return c.json({ message: "try later" }, 503);
    if (c.req.path.endsWith("/reserved")) return c.json({ status: "error", note: "business data" });
    if (c.req.path.endsWith("/text")) return c.text("not json");
    if (c.req.path.endsWith("/hang")) {
      await new Promise((resolve) => c.req.raw.signal.addEventListener("abort", resolve));
      return c.json({});
    }
    return c.json({ echoed: new URL(c.req.url).pathname });
  });
  return app;
}

const get = tool({
  name: "get",
  description: "GET a path.",
  input: z.object({ owner: z.string(), number: z.number().int(), state: z.string().optional() }),
  output: z.object({ echoed: z.string() }).or(z.object({ status: z.string(), note: z.string() })),
  options: z.object({ leaf: z.string().default("") }),
  implementation: ({ leaf }) => ({ type: "http_json", method: "GET", path: `/repos/{owner}/issues/{number}${leaf}` }),
});

const post = tool({
  name: "post",
  description: "POST a comment.",
  input: z.object({ number: z.number().int(), body: z.string() }),
  implementation: () => ({ type: "http_json", method: "POST", path: "/issues/{number}/comments" }),
});

const getPath = (name: string, path: string) =>
  tool({
    name,
    description: `GET ${path}.`,
    input: z.object({}),
    implementation: () => ({ type: "http_json", method: "GET", path }),
  });

async function withSession(
  tools: (env: ReturnType<typeof httpEnv>) => Parameters<Brain["sessions"]["create"]>[0],
  run: (session: Awaited<ReturnType<Brain["sessions"]["create"]>>, seen: Seen[]) => Promise<void>,
) {
  const seen: Seen[] = [];
  await using server = serve(api(seen).fetch);
  await using brain = new Brain({ allow: { net: [server.host] } });
  const env = httpEnv({ name: "api", baseUrl: `${server.url}/v3/`, headers: { authorization: "Bearer t" } });
  await run(await brain.sessions.create(tools(env)), seen);
}

Deno.test("http_json GET fills {fields} URL-encoded below the base path and sends the rest as the query", async () => {
  await withSession((env) => ({ tools: [get({ env })] }), async (session, seen) => {
    const end = await session.call("get", { owner: "a b:c", number: 7, state: "open" }, { deadline: soon() });
    assert.deepEqual(end.outcome, { status: "ok", value: { echoed: "/v3/repos/a%20b%3Ac/issues/7" } });
    assert.deepEqual(seen, [{
      method: "GET",
      path: "/v3/repos/a%20b%3Ac/issues/7",
      query: { state: "open" },
      body: undefined,
      token: "Bearer t",
    }]);
  });
});

Deno.test("http_json refuses path values that are dot segments or hold / \\ ? #, raw or percent-encoded, sending nothing", async () => {
  const owners = [
    ".",
    "..",
    "a/b",
    "a\\b",
    "a?b",
    "a#b",
    "%2e",
    "%2E%2E",
    "a%2Fb",
    "a%5cb",
    "a%3Fb",
    "%23",
    "%252e%252e",
    "%25252F",
  ];
  await withSession((env) => ({ tools: [get({ env })] }), async (session, seen) => {
    for (const owner of owners) {
      const end = await session.call("get", { owner, number: 1 }, { deadline: soon() });
      assert.equal(end.outcome.status === "error" && end.outcome.error.code, "invalid_input", owner);
    }
    assert.deepEqual(seen, []);
    const fine = await session.call("get", { owner: "a.b..c", number: 1 }, { deadline: soon() });
    assert.deepEqual(fine.outcome, { status: "ok", value: { echoed: "/v3/repos/a.b..c/issues/1" } });
  });
});

Deno.test("http_json checks the final URL stays under the base URL even for a descriptor no check saw", () => {
  const base = new URL("http://127.0.0.1:1/api/v1/");
  const escape = (path: string) => () => httpJsonRequest(base, { type: "http_json", method: "GET", path }, {});
  for (const path of ["/../x", "/%2e%2e/x", "/x/../../y"]) assert.throws(escape(path), hasCode("invalid_input"), path);
  assert.equal(httpJsonRequest(base, { type: "http_json", method: "GET", path: "/x" }, {}).url.href, `${base.href}x`);
});

Deno.test("http_json POST sends the fields not in the path as the JSON body", async () => {
  await withSession((env) => ({ tools: [post({ env })] }), async (session, seen) => {
    const end = await session.call("post", { number: 3, body: "hi" }, { deadline: soon() });
    assert.equal(end.cause, "finish");
    assert.deepEqual(seen.map(({ method, path, body }) => ({ method, path, body })), [
      { method: "POST", path: "/v3/issues/3/comments", body: { body: "hi" } },
    ]);
  });
});

Deno.test("http_json: a reserved status in the body is data; non-2xx and non-JSON are error outcomes", async () => {
  await withSession(
    (env) => ({
      tools: [
        get({ env, leaf: "/reserved" }),
        getPath("down", "/unavailable")({ env }),
        getPath("text", "/text")({ env }),
      ],
    }),
    async (session) => {
      const reserved = await session.call("get", { owner: "o", number: 1 }, { deadline: soon() });
      assert.deepEqual(reserved.outcome, { status: "ok", value: { status: "error", note: "business data" } });
      const down = (await session.call("down", {}, { deadline: soon() })).outcome;
      assert.equal(down.status === "error" && down.error.code, "http_error");
      assert.equal(down.status === "error" && down.error.retryable, true);
      assert.equal(down.status === "error" && (down.error.details as { status: number }).status, 503);
      const text = (await session.call("text", {}, { deadline: soon() })).outcome;
      assert.equal(text.status === "error" && text.error.code, "invalid_output");
    },
  );
});

Deno.test("http_json validates input before any request and output against the schema", async () => {
  const strict = tool({
    name: "strict",
    description: "Output must have an id.",
    input: z.object({ number: z.number().int() }),
    output: z.object({ id: z.number() }),
    implementation: () => ({ type: "http_json", method: "GET", path: "/issues/{number}" }),
  });
  await withSession((env) => ({ tools: [strict({ env })] }), async (session, seen) => {
    const badInput = (await session.call("strict", { number: "7" }, { deadline: soon() })).outcome as Outcome;
    assert.equal(badInput.status === "error" && badInput.error.code, "invalid_input");
    assert.equal(seen.length, 0);
    const badOutput = (await session.call("strict", { number: 7 }, { deadline: soon() })).outcome;
    assert.equal(badOutput.status === "error" && badOutput.error.code, "invalid_output");
    assert.equal(seen.length, 1);
  });
});

Deno.test("http_json request past the call's deadline ends timeout and aborts the request", async () => {
  const hang = getPath("hang", "/hang");
  await withSession((env) => ({ tools: [hang({ env })] }), async (session, seen) => {
    const end = await session.call("hang", {}, { deadline: Date.now() + 100 });
    assert.equal(end.cause, "timeout");
    assert.equal(end.outcome.status, "timeout");
    assert.equal(seen.length, 1);
  });
});

Deno.test("an HTTP Environment's host outside the allow-list fails session creation", async () => {
  await using brain = new Brain({ allow: { net: ["127.0.0.1:1"] } });
  const env = httpEnv({ name: "api", baseUrl: "http://127.0.0.1:2" });
  await assert.rejects(brain.sessions.create({ tools: [post({ env })] }), hasCode("permission_denied"));
  await assert.rejects(new Brain().sessions.create({ tools: [post({ env })] }), hasCode("permission_denied"));
});

Deno.test("a malformed http_json descriptor fails at placement with invalid_tool", () => {
  const env = httpEnv({ name: "api", baseUrl: "http://127.0.0.1:2" });
  const malformed = [
    { type: "http_json", method: "FETCH", path: "/x" },
    { type: "http_json", method: "GET", path: "x/{id}" },
    { type: "http_json", method: "GET", path: "/x?q={id}" },
    { type: "http_json", method: "GET", path: "/x/{id" },
    { type: "http_json", method: "GET", path: "/x/../admin" },
    { type: "http_json", method: "GET", path: "/x", body: "{id}" },
    { type: "http_json", method: "GET" },
  ];
  for (const descriptor of malformed) {
    const declared = tool({
      name: "bad",
      description: "Malformed.",
      input: z.object({ id: z.string() }),
      implementation: () => descriptor as never,
    });
    assert.throws(() => declared({ env }), hasCode("invalid_tool"), JSON.stringify(descriptor));
  }
  const other = tool({
    name: "other",
    description: "Not http_json.",
    input: z.object({}),
    implementation: () => ({ type: "sql", query: "select 1" }),
  });
  assert.throws(() => other({ env }), hasCode("unsupported_runtime"));
});

Deno.test("httpEnv refuses base URLs that are not http(s) or carry a query", () => {
  assert.throws(() => httpEnv({ name: "a", baseUrl: "file:///etc" }), hasCode("invalid_argument"));
  assert.throws(() => httpEnv({ name: "a", baseUrl: "http://x.test/?a=1" }), hasCode("invalid_argument"));
  assert.throws(() => httpEnv({ name: "a", baseUrl: "not a url" }), hasCode("invalid_argument"));
  assert.deepEqual(httpEnv({ name: "a", baseUrl: "https://x.test/api", headers: { b: "1", a: "2" } }).describe(), {
    kind: "http",
    name: "a",
    baseUrl: "https://x.test/api",
    headers: ["a", "b"],
    control: [],
  });
});

Deno.test("an HTTP Environment's setup runs before its first request; a failing one sends none", async () => {
  const seen: Seen[] = [];
  await using server = serve(api(seen).fetch);
  await using brain = new Brain({ allow: { net: [server.host] } });
  const order: string[] = [];
  const ready = httpEnv({ name: "ready", baseUrl: server.url, setup: () => void order.push(`setup ${seen.length}`) });
  const broken = httpEnv({
    name: "broken",
    baseUrl: server.url,
    setup: () => Promise.reject(new Error("no lockfile")),
  });
  const session = await brain.sessions.create({
    tools: [getPath("first", "/a")({ env: ready }), getPath("second", "/b")({ env: broken })],
  });
  assert.equal((await session.call("first", {}, { deadline: soon() })).outcome.status, "ok");
  assert.deepEqual(order, ["setup 0"]);
  const failed = (await session.call("second", {}, { deadline: soon() })).outcome;
  assert.equal(failed.status === "error" && failed.error.code, "setup_failed");
  assert.deepEqual(seen.map((request) => request.path), ["/a"]);
});
