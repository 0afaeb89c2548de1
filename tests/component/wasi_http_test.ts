/**
 * The wasi:http imports a sandbox gives a guest, called as a guest's glue calls
 * them: a request outside the grant's net allow-list fails at `handle` with a
 * WASI error code and never reaches the net Worker (none is started).
 */
import assert from "node:assert/strict";
import { BlockingNet } from "../../src/component/wasi/blocking_net.ts";
import { httpImports } from "../../src/component/wasi/http.ts";
import { netAllowed } from "../../src/env/grants.ts";

type Constructor = new (...args: unknown[]) => Record<string, (...args: unknown[]) => unknown>;

function http(grant: string[]) {
  const net = new BlockingNet();
  const calls: string[] = [];
  const counted = Object.assign(net, {
    call: (op: string) => {
      calls.push(op);
      throw new Error(`the net Worker was asked to ${op}`);
    },
  });
  const imports = httpImports(counted, (hostPort) => netAllowed(hostPort, grant));
  const types = imports["wasi:http/types"] as Record<
    string,
    Constructor & Record<string, (...args: unknown[]) => unknown>
  >;
  const { handle } = imports["wasi:http/outgoing-handler"] as { handle(request: unknown, options?: unknown): unknown };
  const request = (scheme: { tag: string; val?: string } | undefined, authority: string | undefined, path = "/") => {
    const made = new types.OutgoingRequest(new types.Fields());
    made.setScheme(scheme);
    made.setAuthority(authority);
    made.setPathWithQuery(path);
    return made;
  };
  return { types, handle, request, calls };
}

const codeOf = (action: () => unknown) => {
  try {
    action();
  } catch (error) {
    return (error as { payload?: { tag?: string } }).payload?.tag;
  }
  return "no error";
};

Deno.test("handle refuses a host or port outside the allow-list with HTTP-request-denied, before the network", () => {
  const { handle, request, calls } = http(["127.0.0.1:8080", "example.com"]);
  for (
    const [scheme, authority] of [
      [{ tag: "HTTP" }, "127.0.0.1:8081"],
      [{ tag: "HTTP" }, "127.0.0.1"],
      [{ tag: "HTTPS" }, "127.0.0.1:8443"],
      [undefined, "localhost:8080"],
      [{ tag: "HTTP" }, "evil.example.com"],
    ] as const
  ) {
    assert.equal(codeOf(() => handle(request(scheme, authority))), "HTTP-request-denied", authority);
  }
  assert.deepEqual(calls, []);
});

Deno.test("with no net grant every request is HTTP-request-denied; malformed ones are HTTP-request-URI-invalid", () => {
  const { handle, request, calls } = http([]);
  assert.equal(codeOf(() => handle(request({ tag: "HTTP" }, "127.0.0.1:8080"))), "HTTP-request-denied");
  assert.equal(codeOf(() => handle(request({ tag: "other", val: "ftp" }, "127.0.0.1"))), "HTTP-request-URI-invalid");
  assert.equal(codeOf(() => handle(request({ tag: "HTTP" }, undefined))), "HTTP-request-URI-invalid");
  // A path not starting with / would otherwise run into the authority: 127.0.0.1:8080.evil.example.
  const { handle: granted, request: make } = http(["127.0.0.1:8080"]);
  assert.equal(
    codeOf(() => granted(make({ tag: "HTTP" }, "127.0.0.1:8080", ".evil.example/"))),
    "HTTP-request-URI-invalid",
  );
  assert.deepEqual(calls, []);
});

Deno.test("an authority smuggling a user, path or space is refused when set", () => {
  const { request } = http(["127.0.0.1:8080"]);
  for (const authority of ["user@127.0.0.1:8080", "127.0.0.1:8080/x", "127.0.0.1 :8080"]) {
    assert.throws(() => request({ tag: "HTTP" }, authority), (error) => "payload" in (error as object), authority);
  }
});

Deno.test("fields validate names and values, and a response's headers are immutable", () => {
  const { types } = http([]);
  const fields = new types.Fields();
  assert.equal(codeOf(() => fields.append("bad name", new Uint8Array())), "invalid-syntax");
  assert.equal(codeOf(() => fields.append("x", new TextEncoder().encode("a\r\nb: c"))), "invalid-syntax");
  fields.append("X-One", new TextEncoder().encode("1"));
  fields.append("x-one", new TextEncoder().encode("2"));
  assert.deepEqual((fields.get("X-ONE") as Uint8Array[]).map((value) => new TextDecoder().decode(value)), ["1", "2"]);
  const frozen = types.Fields.frozen([["a", new TextEncoder().encode("b")]]) as Record<
    string,
    (...args: unknown[]) => unknown
  >;
  assert.equal(codeOf(() => frozen.set("a", [])), "immutable");
  assert.equal(codeOf(() => frozen.delete("a")), "immutable");
});
