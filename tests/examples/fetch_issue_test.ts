import assert from "node:assert/strict";
import { fetchIssueExample } from "../../examples/fetch_issue.ts";

Deno.test("fetch_issue example: the github HTTP Environment interprets the descriptor", async () => {
  const end = await fetchIssueExample(7);
  assert.equal(end.cause, "finish");
  assert.deepEqual(end.outcome, {
    status: "ok",
    value: { number: 7, title: "Descriptors for HTTP Environments", state: "open" },
  });
});

Deno.test("fetch_issue example: a missing issue is an http_error outcome with the API's status", async () => {
  const end = await fetchIssueExample(8);
  assert.equal(end.cause, "finish");
  assert.equal(end.outcome.status, "error");
  if (end.outcome.status !== "error") return;
  assert.equal(end.outcome.error.code, "http_error");
  assert.equal((end.outcome.error.details as { status: number }).status, 404);
  assert.equal(end.outcome.error.retryable, false);
});
