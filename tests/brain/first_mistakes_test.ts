import assert from "node:assert/strict";
import { z } from "zod";
import { z as z3 } from "zod3";
import { Brain, fail, hostEnv, httpTool, openAICompatible, tool } from "../../mod.ts";
import { hasCode } from "../_support/has_code.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { createBrainServer, serveBrain } from "../../src/host/server/mod.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";

/** The mistakes of a user's first hour: each is a BrainError whose message says what to do. */

const lookup = tool({
  name: "lookup",
  description: "Look up one customer record by id.",
  input: z.object({ id: z.string() }),
  options: z.object({ prefix: z.string() }),
  run: ({ id }, ctx) => ctx.finish(`${ctx.options.prefix}${id}`),
});

/** Another declaration under the same name. */
const impostor = tool({
  name: "lookup",
  description: "Not the placed lookup.",
  input: z.object({ id: z.string() }),
  run: (_input, ctx) => ctx.finish(null),
});

Deno.test("a misspelled declaration field or placement option is named with the ones there are", () => {
  assert.throws(
    () => tool({ name: "x", description: "d", input: z.object({}), runn: () => null } as never),
    hasCode("invalid_tool", /unknown declaration field runn: the fields are name, description, input, .*run/),
  );
  assert.throws(
    () => lookup({ prefx: "customer:" } as never),
    hasCode("invalid_options", /unknown option prefx: the options are prefix/),
  );
  assert.doesNotThrow(() => lookup({ prefix: "customer:" }));
});

Deno.test("a missing input schema, or a zod 3 schema inside a zod 4 one, says how to declare it", () => {
  assert.throws(
    () => tool({ name: "x", description: "d", run: () => null } as never),
    hasCode("invalid_schema", /tool x: declare its input, as in input: z\.object/),
  );
  assert.throws(
    () => tool({ name: "x", description: "d", input: z.object({ id: z3.string() as never }), run: () => null }),
    hasCode("invalid_schema", /a part of it is not a zod 4 schema \(a zod 3 schema inside a zod 4 one\?\)/),
  );
});

Deno.test("openAICompatible given the chat/completions endpoint as its baseUrl names the base to give", () => {
  assert.throws(
    () => openAICompatible({ baseUrl: "https://api.openai.com/v1/chat/completions" }),
    hasCode(
      "invalid_argument",
      /baseUrl is the API's base, such as https:\/\/api\.openai\.com\/v1\/, without chat\/completions/,
    ),
  );
  assert.equal(openAICompatible({ baseUrl: "https://api.openai.com/v1" }).name, "openai-compatible");
});

Deno.test("a remote Brain's url without a scheme, or without a token, is named with what to give", () => {
  assert.throws(
    () => new Brain({ url: "localhost:8787", token: "t", host: "app" }),
    hasCode(
      "invalid_argument",
      /url must be an http\(s\) or ws\(s\) URL, such as http:\/\/127\.0\.0\.1:8787; got "localhost:8787"/,
    ),
  );
  assert.throws(
    () => new Brain({ url: "http://127.0.0.1:8787", host: "app" } as never),
    hasCode(
      "invalid_argument",
      /as in new Brain\(\{ url, token, host \}\); got url "http:\/\/127\.0\.0\.1:8787" and token undefined/,
    ),
  );
});

Deno.test("httpTool with a misspelled field names httpTool's fields, not tool()'s", () => {
  assert.throws(
    () =>
      httpTool({ name: "x", description: "d", input: z.object({}), url: "http://127.0.0.1:1/", methd: "GET" } as never),
    hasCode("invalid_tool", /httpTool "x": unknown field methd: the fields are name, description, input, output, url/),
  );
});

Deno.test("fail() with a misspelled option names its options", () => {
  assert.throws(
    () => fail("not_found", "no such customer", { retriable: true } as never),
    hasCode("invalid_argument", /fail: unknown option retriable: the options are retryable, details/),
  );
  assert.deepEqual(fail("not_found", "no such customer", { retryable: true }).status, "error");
});

Deno.test("new Brain({ path }) points at await Brain.open({ path })", () => {
  assert.throws(
    () => new Brain({ path: ".brain/brain.kv" }),
    hasCode("invalid_argument", /a Brain over a path opens asynchronously: use await Brain\.open\(\{ path \}\)/),
  );
});

Deno.test("embedded: an unknown Tool, a missing session, no model and a closed Brain say what to do", async () => {
  const brain = new Brain();
  const session = await brain.sessions.create({ tools: [lookup({ prefix: "customer:" })] });
  await assert.rejects(session.call("lookpu", { id: "7" }), hasCode("unknown_tool", /the Tools it holds are lookup/));
  await assert.rejects(
    session.call(impostor(), { id: "7" }),
    hasCode("unknown_tool", /call it by name, session\.call\("lookup", input\)/),
  );
  const reading = await brain.sessions.get(session.id);
  await assert.rejects(
    reading.call("lookup", { id: "7" }),
    hasCode("unknown_tool", /holds no Tools; open it with them, brain\.sessions\.get\(id, \{ tools/),
  );
  await assert.rejects(
    brain.sessions.create({ environments: [hostEnv({ name: "app" })] }),
    hasCode(
      "invalid_argument",
      /environments\[0\] \(app\) places no Tools of its own: only an Environment such as mcpEnv/,
    ),
  );
  await assert.rejects(
    brain.sessions.create({ environments: [Promise.resolve(hostEnv({ name: "app" })) as never] }),
    hasCode("invalid_argument", /environments\[0\] is a Promise: await it first/),
  );
  await assert.rejects(
    brain.sessions.get("nope"),
    hasCode("session_not_found", /no session nope: brain\.sessions\.list/),
  );
  await assert.rejects(session.send("hi"), hasCode("model_unavailable", /create or open it with one/));
  await brain.close();
  await assert.rejects(
    session.call("lookup", { id: "7" }),
    hasCode("session_closed", /brain\.close\(\); an open Brain reopens it with brain\.sessions\.get/),
  );
});

Deno.test("remote: the same mistakes read the same, and a wrong token, server or full server say why", async () => {
  await using server = await servedBrain({ hostTokens: { app: "t", other: "o" }, limits: { maxHosts: 2 } });
  const brain = new Brain({ url: server.url, token: "t", host: "app" });
  const session = await brain.sessions.create({ tools: [lookup({ prefix: "customer:" })] });
  await assert.rejects(session.call("lookpu", { id: "7" }), hasCode("unknown_tool", /the Tools it holds are lookup/));
  const missing = await brain.sessions.get("nope").catch((error) => error);
  assert.ok(hasCode("session_not_found", /no session nope: brain\.sessions\.list/)(missing), String(missing));
  await using other = new Brain({ url: server.url, token: "o", host: "other" });
  const theirs = await other.sessions.get(session.id).catch((error) => error);
  assert.equal(theirs.message, missing.message.replace("nope", session.id), "another host's session reads as missing");

  await using wrong = new Brain({ url: server.url, token: "bad", host: "app" });
  await assert.rejects(
    wrong.sessions.list(),
    hasCode("unauthorized", /wrong or missing token; a host the server does not know yet registers with .*serverToken/),
  );
  await using third = new Brain({ url: server.url, token: "x", host: "third" });
  await assert.rejects(third.sessions.list(), hasCode("unauthorized"));

  await using elsewhere = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response(null, { status: 404 }),
  );
  await using astray = new Brain({ url: `http://127.0.0.1:${elsewhere.addr.port}`, token: "t", host: "app" });
  await assert.rejects(astray.sessions.list(), hasCode("connection_lost", /is the url that of a Brain server/));

  await brain.close();
  await assert.rejects(session.call("lookup", { id: "7" }), hasCode("session_closed", /brain\.close\(\)/));
});

Deno.test("a misspelled session model option is named with the model's options", async () => {
  await using brain = new Brain();
  const provider = new ScriptedProvider(["hi"]);
  await assert.rejects(
    brain.sessions.create({ model: { provider, model: "m", credential: { apiKey: "k" } } as never }),
    hasCode(
      "invalid_argument",
      /unknown session model options "credential": the known ones are provider, model, credentials/,
    ),
  );
  const session = await brain.sessions.create({ model: { provider, model: "m", credentials: { apiKey: "k" } } });
  assert.equal((await session.send("hello")).content, "hi");
});

Deno.test("a misspelled server option is named with the server's options", async () => {
  await assert.rejects(
    serveBrain({ hosttokens: { app: "t" } } as never),
    hasCode("invalid_argument", /unknown Brain server options "hosttokens": the known ones are .*hostTokens.*port/),
  );
  await assert.rejects(
    createBrainServer({ servertoken: "op" } as never),
    hasCode("invalid_argument", /unknown Brain server options "servertoken": the known ones are .*serverToken/),
  );
});

Deno.test("remote: a server with all the hosts it admits refuses one more with limit_exceeded", async () => {
  await using server = await servedBrain({ serverToken: "op", limits: { maxHosts: 1 } });
  await using first = new Brain({ url: server.url, token: "t1", host: "first", serverToken: "op" });
  await first.sessions.list();
  await using second = new Brain({ url: server.url, token: "t2", host: "second", serverToken: "op" });
  await assert.rejects(second.sessions.list(), hasCode("limit_exceeded", /maxHosts/));
});
