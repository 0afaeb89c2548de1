/** Addresses as wasi:sockets gives them and as allow-lists name them. */
import assert from "node:assert/strict";
import { ipText, parseIp } from "../../src/component/wasi/sockets.ts";

Deno.test("IPv4 and IPv6 addresses round-trip to the text an allow-list names", () => {
  assert.deepEqual(parseIp("127.0.0.1"), { tag: "ipv4", val: [127, 0, 0, 1] });
  assert.deepEqual(parseIp("::1"), { tag: "ipv6", val: [0, 0, 0, 0, 0, 0, 0, 1] });
  assert.deepEqual(parseIp("[fe80::1:2]"), { tag: "ipv6", val: [0xfe80, 0, 0, 0, 0, 0, 1, 2] });
  assert.equal(ipText({ tag: "ipv6", val: [0, 0, 0, 0, 0, 0, 0, 1] }), "[::1]");
  assert.equal(ipText({ tag: "ipv6", val: [0x2001, 0xdb8, 0, 0, 1, 0, 0, 1] }), "[2001:db8::1:0:0:1]");
  assert.equal(ipText(parseIp("10.0.0.255")!), "10.0.0.255");
});

Deno.test("names and malformed addresses are not addresses", () => {
  for (const text of ["localhost", "256.0.0.1", "1.2.3", "1::2::3", "1:2:3:4:5:6:7:8:9", "g::1", ""]) {
    assert.equal(parseIp(text), undefined, text);
  }
});
