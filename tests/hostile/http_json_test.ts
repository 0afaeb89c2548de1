import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, type CallEnd, httpEnv, tool } from "../../mod.ts";

const code = ({ outcome }: CallEnd) => outcome.status === "error" ? outcome.error.code : outcome.status;

Deno.test("hostile http_json input: lone surrogates a URL cannot carry are invalid_input, never a URIError or a silent U+FFFD", async () => {
  const seen: string[] = [];
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    seen.push(new URL(request.url).pathname + new URL(request.url).search);
    return Response.json({ ok: true });
  });
  const api = httpEnv({ name: "api", baseUrl: `http://127.0.0.1:${server.addr.port}/api/` });
  const get = tool({
    name: "get",
    description: "Gets one item.",
    input: z.object({ id: z.string() }).catchall(z.string()),
    implementation: () => ({ type: "http_json", method: "GET", path: "/items/{id}" }),
  });
  await using brain = new Brain({ allow: { net: [`127.0.0.1:${server.addr.port}`] } });
  const session = await brain.sessions.create({ tools: [get({ env: api })] });
  const inputs: [string, Record<string, string>, string][] = [
    ["a lone high surrogate in the path", { id: "\ud800" }, "invalid_input"],
    ["a lone low surrogate in the path", { id: "a\udc00" }, "invalid_input"],
    ["a lone surrogate in a query value", { id: "ok", q: "\udc00x" }, "invalid_input"],
    ["a lone surrogate in a query name", { id: "ok", ["\ud800"]: "x" }, "invalid_input"],
    ["a pair in the path", { id: "\ud83d\ude00" }, "ok"],
    ["NUL in the path", { id: "a\0b" }, "ok"],
  ];
  const codes = [];
  for (const [what, input] of inputs) codes.push(`${what}: ${code(await session.call("get", input))}`);
  assert.deepEqual(codes, inputs.map(([what, , expected]) => `${what}: ${expected}`));
  assert.deepEqual(seen, ["/api/items/%F0%9F%98%80", "/api/items/a%00b"], "only the well-formed inputs were sent");
});

Deno.test("hostile http_json input: fields that are each one segment but make a dot segment together are invalid_input", async () => {
  const seen: string[] = [];
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    seen.push(new URL(request.url).pathname);
    return Response.json({ ok: true });
  });
  const api = httpEnv({ name: "api", baseUrl: `http://127.0.0.1:${server.addr.port}/api/v1/` });
  const declare = (name: string, path: string) =>
    tool({
      name,
      description: "Gets one file.",
      input: z.object({ a: z.string(), b: z.string() }),
      implementation: () => ({ type: "http_json", method: "GET", path }),
    })({ env: api });
  await using brain = new Brain({ allow: { net: [`127.0.0.1:${server.addr.port}`] } });
  const session = await brain.sessions.create({
    tools: [declare("dotted", "/files/{a}.{b}/raw"), declare("joined", "/files/{a}{b}/raw")],
  });
  const inputs: [string, string, Record<string, string>, string][] = [
    ["two empty fields around a dot", "dotted", { a: "", b: "" }, "invalid_input"],
    ["a dot and an empty field joined", "joined", { a: ".", b: "." }, "invalid_input"],
    ["halves of an encoded dot joined", "joined", { a: "%2", b: "e%2e" }, "invalid_input"],
    ["halves of an encoded slash joined", "joined", { a: "x%2", b: "F.." }, "invalid_input"],
    ["a file name", "dotted", { a: "notes", b: "txt" }, "ok"],
  ];
  const codes = [];
  for (const [what, name, input] of inputs) codes.push(`${what}: ${code(await session.call(name, input))}`);
  assert.deepEqual(codes, inputs.map(([what, , , expected]) => `${what}: ${expected}`));
  assert.deepEqual(seen, ["/api/v1/files/notes.txt/raw"], "only the well-formed input was sent");
});
