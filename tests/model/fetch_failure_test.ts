import assert from "node:assert/strict";
import { fetchFailure } from "../../src/model/fetch_failure.ts";

const url = new URL("http://no-such-host.invalid/v1/chat/completions");

// Deno 2.9's own wording, measured: a DNS failure is a TypeError whose cause names the Connect step.
const dns = new TypeError("fetch failed", {
  cause: new Error(
    "error sending request for url (http://no-such-host.invalid/x): client error (Connect): dns error: " +
      "failed to lookup address information: Name or service not known",
  ),
});
const afterSending = new TypeError("fetch failed", {
  cause: new Error(
    "error sending request from 127.0.0.1:58152 for http://127.0.0.1:43683/x (127.0.0.1:43683): " +
      "client error (SendRequest): connection closed before message completed",
  ),
});

Deno.test("a DNS failure never left: connection_failed, retryable, with its cause", () => {
  const error = fetchFailure("p", url, dns);
  assert.equal(error.code, "connection_failed");
  assert.match(error.message, /^provider p could not connect to http:\/\/no-such-host\.invalid: .*dns error/);
  assert.deepEqual(error.details, { retryable: true, cause: (dns.cause as Error).message });
  assert.equal(error.cause, dns);
});

Deno.test("a connection closed while sending may have been received: connection_lost", () => {
  const error = fetchFailure("p", url, afterSending);
  assert.equal(error.code, "connection_lost");
  assert.match(error.message, /failed after sending: .*connection closed before message completed/);
});
